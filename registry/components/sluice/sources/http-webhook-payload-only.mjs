import { payloadOnly, requestSummary } from "../common/http-request.mjs";

export default {
  key: "sluice-http-webhook-payload-only",
  name: "HTTP Webhook Payload Only",
  description: "Emits only the body of each HTTP request sent to its endpoint URL (parsed JSON or form, else the raw text). The caller gets 200 as soon as the request is stored.",
  version: "1.0.0",
  type: "source",
  props: {
    http: { type: "$.interface.http", label: "Endpoint" },
  },
  run(event) {
    this.$emit(payloadOnly(event), { summary: requestSummary(event) });
  },
};
