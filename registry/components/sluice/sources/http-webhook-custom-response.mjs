import { fullRequest, payloadOnly, requestSummary } from "../common/http-request.mjs";

export default {
  key: "sluice-http-webhook-custom-response",
  name: "HTTP Webhook Custom Response",
  description: "Emits each HTTP request sent to its endpoint URL and answers the caller with the status, content type and body you configure.",
  version: "1.0.0",
  type: "source",
  props: {
    http: { type: "$.interface.http", customResponse: true, label: "Endpoint" },
    responseStatus: {
      type: "integer",
      label: "Response status",
      optional: true,
      default: 200,
      min: 100,
      max: 599,
    },
    responseContentType: {
      type: "string",
      label: "Response content type",
      optional: true,
      default: "application/json",
    },
    responseBody: {
      type: "string",
      label: "Response body",
      description: "Sent as it is, with the content type above.",
      optional: true,
      default: "{\"ok\":true}",
    },
    bodyOnly: {
      type: "boolean",
      label: "Emit the body only",
      description: "Emit only the request body instead of the whole request.",
      optional: true,
      default: false,
    },
  },
  run(event) {
    this.http.respond({
      status: this.responseStatus ?? 200,
      headers: { "content-type": this.responseContentType ?? "application/json" },
      body: this.responseBody ?? "{\"ok\":true}",
    });
    this.$emit(this.bodyOnly ? payloadOnly(event) : fullRequest(event), { summary: requestSummary(event) });
  },
};
