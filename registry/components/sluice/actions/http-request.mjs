export default {
  key: "sluice-http-request",
  name: "HTTP Request",
  description: "Sends the HTTP request you configure (URL, method, headers, query parameters, body, basic or bearer auth) and returns the response: status, headers and data (parsed JSON when the response is JSON).",
  version: "1.0.0",
  type: "action",
  props: {
    request: { type: "http_request", label: "Request" },
    failOnErrorStatus: {
      type: "boolean",
      label: "Fail on an error status",
      description: "Fail the step when the response status is 400 or more.",
      optional: true,
      default: true,
    },
  },
  async run({ $ }) {
    const method = String(this.request.method ?? "GET").toUpperCase();
    const response = await this.request.execute();
    const line = `${method} ${this.request.url}: HTTP ${response.status}`;
    if ((this.failOnErrorStatus ?? true) && response.status >= 400) throw new Error(`${line} ${typeof response.data === "string" ? response.data.slice(0, 200) : JSON.stringify(response.data ?? null).slice(0, 200)}`);
    $.export("$summary", line);
    return { status: response.status, headers: response.headers, data: response.data };
  },
};
