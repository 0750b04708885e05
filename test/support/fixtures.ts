/** The source of spec 4.5's workflow: an HTTP source whose run emits the request body. */
export const ECHO_SOURCE = `
export default {
  name: "Echo",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    console.log("got", event.method, event.path);
    this.$emit(event.body, { summary: "request " + event.method, id: event.body && event.body.n });
  },
};`;

/** An HTTP source that emits as many events as the request's `n` says (a flood from a tiny request). */
export const FLOOD_SOURCE = `
export default {
  name: "Flood",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const n = Number(event.body && event.body.n) || 100000;
    for (let i = 0; i < n; i++) this.$emit({ i, pad: "x".repeat(100) });
  },
};`;
