export default {
  key: "sluice-custom-http-response",
  name: "Custom HTTP Response",
  description: "Answers the HTTP request that triggered the workflow (an HTTP trigger with a custom response) with the status, headers and body you give. Later steps still run.",
  version: "1.0.0",
  type: "action",
  props: {
    status: { type: "integer", label: "Status", optional: true, default: 200, min: 100, max: 599 },
    headers: { type: "object", label: "Headers", optional: true },
    body: { type: "any", label: "Body", description: "Text, or an object or array sent as JSON.", optional: true },
  },
  async run({ $ }) {
    const status = this.status ?? 200;
    await $.respond({ status, headers: this.headers ?? {}, body: this.body ?? "" });
    $.export("$summary", `Responded with HTTP ${status}`);
    return { status };
  },
};
