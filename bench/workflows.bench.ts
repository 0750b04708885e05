import { benchEndToEnd, BenchPipeline, sourcePipeline } from './e2e.bench';

/** Step code: plain action components, as a user would save them inline. */
const STEP_1 = `export default { name: "add-a", version: "0.0.1", type: "action", props: {},
  async run({ steps }) { return { ...steps.trigger.event.body, a: 1 }; } }`;
const STEP_2 = `export default { name: "add-b", version: "0.0.1", type: "action", props: { input: { type: "object" } },
  async run({ $ }) { $.export("b", 2); return { ...this.input, b: 2 }; } }`;
const STEP_3 = `export default { name: "emit", version: "0.0.1", type: "action", props: { input: { type: "object" } },
  async run({ $ }) { $.send.emit({ raw_event: this.input }); } }`;

/** The steps of the three-step workflow below (transform, transform, `$.send.emit`), as `POST /v1/workflows` takes them. */
export const THREE_STEPS = [
  { name: 'step1', component_code: STEP_1, configured_props: {} },
  { name: 'step2', component_code: STEP_2, configured_props: { input: '{{steps.step1.$return_value}}' } },
  { name: 'step3', component_code: STEP_3, configured_props: { input: '{{steps.step2.$return_value}}' } },
];

/**
 * A three-step workflow (transform, transform, `$.send.emit`) triggered over HTTP; a webhook
 * subscribed to the workflow receives each run's emit. One unit of work is one run.
 * `BENCH_WORKFLOW_CONCURRENCY` sets the workflow's `concurrency` (default 1).
 */
export const workflowPipeline: BenchPipeline = async (api, webhookId) => {
  const wf = await api('/v1/workflows', {
    name: 'bench',
    trigger: { type: 'http' },
    // Runs of one workflow at once (default 1, as for users: trigger order kept).
    settings: { concurrency: Number(process.env.BENCH_WORKFLOW_CONCURRENCY ?? 1) },
    steps: THREE_STEPS,
  });
  await api('/v1/subscriptions', { emitter_id: wf.id, listener_id: webhookId });
  return { endpointUrl: (wf.trigger?.endpoint_url ?? wf.endpoint_url) as string };
};

/** The first step of a workflow that listens to a source: its trigger's event is the source's emit (the request's body). */
const LISTENER_STEP_1 = `export default { name: "add-a", version: "0.0.1", type: "action", props: {},
  async run({ steps }) { return { ...steps.trigger.event, a: 1 }; } }`;

/**
 * The e2e source (HTTP in, the body emitted) with a workflow listening to it (`trigger: emitter`):
 * the three steps above, the last one emitting to a webhook subscribed to the workflow. One unit
 * of work is one request, its source run, the workflow run its emit starts, and that run's
 * delivery: the path of runs started by emits (their ids, their dispatches).
 */
export const listenerPipeline: BenchPipeline = async (api, webhookId) => {
  const src = await api('/v1/sources', {
    component_code: 'export default { name: "bench", version: "1", props: { http: { type: "$.interface.http" } }, run(e) { this.$emit(e.body); } }',
  });
  const wf = await api('/v1/workflows', {
    name: 'bench-listener',
    trigger: { type: 'emitter', emitter_id: src.id },
    settings: { concurrency: Number(process.env.BENCH_WORKFLOW_CONCURRENCY ?? 1) },
    steps: [{ ...THREE_STEPS[0], component_code: LISTENER_STEP_1 }, THREE_STEPS[1], THREE_STEPS[2]],
  });
  await api('/v1/subscriptions', { emitter_id: wf.id, listener_id: webhookId });
  return { endpointUrl: src.endpoint_url as string };
};

/**
 * The pipeline `BENCH_PIPELINE` names for the profile, A/B and WAL benches: `workflow` (the
 * three-step workflow above, triggered over HTTP), `listener` (that workflow listening to the e2e
 * source), else the source.
 */
export function pipelineFromEnv(): BenchPipeline {
  const name = process.env.BENCH_PIPELINE;
  return name === 'workflow' ? workflowPipeline : name === 'listener' ? listenerPipeline : sourcePipeline;
}

export async function benchWorkflows(log: (s: string) => void): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  await benchEndToEnd({
    rates: (process.env.BENCH_WORKFLOW_RATES ?? '200').split(',').map(Number),
    seconds,
    saturationSeconds: Number(process.env.BENCH_SATURATION_SECONDS ?? seconds),
    log,
    pipeline: workflowPipeline,
    unit: 'run',
  });
}
