import { fullRequest, requestSummary } from "../common/http-request.mjs";

export default {
  key: "sluice-http-webhook",
  name: "HTTP Webhook",
  description: "Emits every HTTP request sent to its endpoint URL (any method and sub-path): method, path, query, headers and body. The caller gets 200 as soon as the request is stored.",
  version: "1.0.0",
  type: "source",
  props: {
    http: { type: "$.interface.http", label: "Endpoint" },
  },
  run(event) {
    this.$emit(fullRequest(event), { summary: requestSummary(event) });
  },
};
