/*
 * Actions used as workflow steps by the workflow e2e tests (issue 8). Each is an ordinary action
 * as the public registry writes them: `run({ $, steps })`, `$.export`, `$.send.*`, `$.respond`,
 * `$.flow.exit`.
 */

/** Step 1: doubles `n`, exports it and a summary; with `counter_url`, reports itself there with `$.send.http`. */
export const DOUBLE_ACTION = `
export default {
  name: "Double", key: "wf-double", version: "0.1.0", type: "action",
  props: { n: { type: "integer" }, counter_url: { type: "string", optional: true } },
  async run({ $, steps }) {
    if (this.counter_url) $.send.http({ method: "POST", url: this.counter_url, data: { n: this.n } });
    $.export("doubled", this.n * 2);
    $.export("$summary", "doubled " + this.n);
    return { n: this.n };
  },
};`;

/** Adds one to `value`; with `gate_url`, first waits for that URL to answer (a crash is timed there). */
export const ADD_ONE_ACTION = `
export default {
  name: "Add one", key: "wf-add-one", version: "0.1.0", type: "action",
  props: { value: { type: "integer" }, gate_url: { type: "string", optional: true } },
  async run({ $ }) {
    if (this.gate_url) await fetch(this.gate_url);
    $.export("sum", this.value + 1);
    return this.value + 1;
  },
};`;

/** Emits `{sum, text}` on the "results" channel of the workflow. */
export const EMIT_ACTION = `
export default {
  name: "Emit result", key: "wf-emit", version: "0.1.0", type: "action",
  props: { sum: { type: "any" }, text: { type: "string" } },
  async run({ $ }) {
    $.send.emit({ raw_event: { sum: this.sum, text: this.text }, name: "results" });
  },
};`;

/** Answers the HTTP trigger's caller with what the request's body said, then goes on. */
export const RESPOND_ACTION = `
export default {
  name: "Respond", key: "wf-respond", version: "0.1.0", type: "action",
  props: { greeting: { type: "string" } },
  async run({ $, steps }) {
    await $.respond({ status: 201, headers: { "x-step": "respond" }, body: { greeting: this.greeting, name: steps.trigger.event.body.name } });
    return "responded";
  },
};`;

/** Ends the run here. */
export const EXIT_ACTION = `
export default {
  name: "Stop", key: "wf-stop", version: "0.1.0", type: "action",
  props: {},
  async run({ $ }) {
    return $.flow.exit("nothing to do today");
  },
};`;

/** Always throws. */
export const FAILING_ACTION = `
export default {
  name: "Fail", key: "wf-fail", version: "0.1.0", type: "action",
  props: {},
  async run() {
    throw new TypeError("the input was not what I expected");
  },
};`;

/** Sends the trigger event's `msg` to the workflow's SSE channel "news". */
export const SSE_ACTION = `
export default {
  name: "Announce", key: "wf-announce", version: "0.1.0", type: "action",
  props: {},
  async run({ $, steps }) {
    $.send.sse({ channel: "news", payload: { msg: steps.trigger.event.msg } });
  },
};`;
