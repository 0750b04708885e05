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
