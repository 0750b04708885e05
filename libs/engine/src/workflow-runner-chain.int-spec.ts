import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { Streams, WorkflowRunStarted } from '@app/domain';
import { bundleComponent, SandboxInvocation, SandboxSupervisor } from '@app/sandbox';
import type { CompiledComponent } from './engine-runtime';
import { EngineRuntime } from './engine-runtime';
import { WorkflowRunner } from './workflow-runner';

/**
 * The runner with a real sandbox worker and the real SQLite log: a step's invocation carries the
 * steps after it that the worker may run alone (`chainSteps`), and the run's records are then the
 * same as when each step is sent on its own, in fewer calls to the sandbox.
 */
describe('WorkflowRunner: chained steps', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 5000 } });
  const components = new Map<string, CompiledComponent>();
  let dataDir: string;
  let rt: EngineRuntime;
  let calls: SandboxInvocation[];

  const CODE: Record<string, [string, { name: string; type: string }[]]> = {
    // Takes the trigger's body and adds to it; exports what it saw.
    start: [`export default { type: "action", run({ steps, $ }) { $.export("n", steps.trigger.event.n); return { ...steps.trigger.event, started: 1 }; } }`, []],
    add: [`export default { type: "action", props: { input: { type: "any" }, label: { type: "string", optional: true } },
      run({ $ }) { $.export("label", this.label ?? null); return { ...this.input, added: (this.input.added ?? 0) + 1 }; } }`, [{ name: 'input', type: 'any' }, { name: 'label', type: 'string' }]],
    emitting: [`export default { type: "action", props: { input: { type: "any" } },
      run({ $ }) { $.send.emit({ raw_event: this.input }); $.send.sse({ channel: "c", payload: 1 }); return this.input; } }`, [{ name: 'input', type: 'any' }]],
    failing: ['export default { type: "action", run() { throw new Error("step failed") } }', []],
    responding: [`export default { type: "action", props: { input: { type: "any" } },
      run({ $ }) { $.respond({ status: 201, body: this.input }); return this.input; } }`, [{ name: 'input', type: 'any' }]],
    counting: [`export default { type: "action", props: { db: "$.service.db", input: { type: "any" } },
      run() { const n = (this.db.get("n") ?? 0) + 1; this.db.set("n", n); return { ...this.input, n }; } }`, [{ name: 'db', type: '$.service.db' }, { name: 'input', type: 'any' }]],
  };

  beforeAll(async () => {
    await sandbox.start();
    for (const [id, [code, props]] of Object.entries(CODE)) {
      const { bundle, codeHash } = await bundleComponent(code);
      components.set(id, { definition: { name: id, version: '1', type: 'action', props, hooks: [], methods: [], hasRun: true }, bundle, codeHash } as CompiledComponent);
    }
  });
  afterAll(() => sandbox.stop());

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-chain-'));
    calls = [];
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
  });
  afterEach(async () => {
    await rt.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const runner = (chainSteps: boolean) => new WorkflowRunner({
    store: rt.store, box: rt.box,
    component: (id) => components.get(id),
    invoke: (inv) => {
      calls.push(inv);
      return sandbox.invoke(inv);
    },
    sends: { perform: async () => ({ ok: true }) },
    stepDb: async () => ({ n: 41 }),
    stepTimeoutMs: 5000,
    concurrency: () => 1,
    chainSteps,
  });

  const started = (runId: string, steps: string[], extra: Partial<WorkflowRunStarted> = {}): WorkflowRunStarted => ({
    runId, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 1, customResponse: false,
    steps: steps.map((c, i) => ({
      name: `s${i}`, componentId: c,
      configuredProps: i === 0 ? {} : { input: `{{steps.s${i - 1}.$return_value}}`, label: `after {{steps.s${i - 1}.$return_value.added}} of {{steps.trigger.event.n}}` },
    })),
    trigger: { event: { n: 5 }, context: { emitter_id: 'p_1', emit_id: runId, ts: 1, trigger: 'manual' } },
    ...extra,
  });

  /** The run's records without what differs between two runs of the same steps (ids, times, durations). */
  async function records(runId: string): Promise<unknown[]> {
    const events = await rt.store.readStream(Streams.workflowRun(runId));
    return events.map((e) => {
      const d = e.data as Record<string, unknown>;
      if (e.type === 'workflow.step_completed.v1') return { type: e.type, index: d.index, name: d.name, status: d.status, exports: d.exports, ret: d.ret, sends: d.sends, error: (d.error as { message?: string } | undefined)?.message, httpResponse: d.httpResponse };
      if (e.type === 'workflow.send_performed.v1') return { type: e.type, stepIndex: d.stepIndex, sendIndex: d.sendIndex, kind: d.kind, ok: d.ok };
      if (e.type === 'workflow.run_finished.v1') return { type: e.type, status: d.status };
      return { type: e.type };
    });
  }

  /** Runs `steps` once with chaining and once without: the records of both, and the calls each made. */
  async function bothWays(steps: string[], extra: Partial<WorkflowRunStarted> = {}) {
    const out: { records: unknown[]; calls: string[] }[] = [];
    for (const chain of [true, false]) {
      calls = [];
      const runId = `run_${chain ? 'chained' : 'alone'}`;
      const run = runner(chain).start(started(runId, steps, extra));
      await run.done;
      out.push({ records: await records(runId), calls: calls.map((c) => [c.instanceId.split('@')[0], ...(c.chain?.links.map((l) => l.name) ?? [])].join('+')) });
    }
    return { chained: out[0], alone: out[1] };
  }

  it('three steps: one call to the sandbox instead of three, and the same records', async () => {
    const { chained, alone } = await bothWays(['start', 'add', 'add']);
    expect(chained.calls).toEqual(['p_1/s0+s1+s2']);
    expect(alone.calls).toEqual(['p_1/s0', 'p_1/s1', 'p_1/s2']);
    expect(chained.records).toEqual(alone.records);
    // The references were resolved against the earlier steps' results.
    expect(chained.records[3]).toMatchObject({ index: 2, ret: { n: 5, started: 1, added: 2 }, exports: { label: 'after 1 of 5' } });
  });

  it('emits and SSE messages between chained steps are recorded in their place', async () => {
    const { chained, alone } = await bothWays(['start', 'emitting', 'add']);
    expect(chained.calls).toEqual(['p_1/s0+s1+s2']);
    expect(chained.records).toEqual(alone.records);
    expect((chained.records as { type: string }[]).map((r) => r.type)).toEqual([
      'workflow.run_started.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.event_emitted.v1',
      'workflow.send_performed.v1', 'workflow.send_performed.v1', 'workflow.step_completed.v1', 'workflow.run_finished.v1',
    ]);
  });

  it('a failing step ends the chain and the run; the steps after it never run', async () => {
    const { chained, alone } = await bothWays(['start', 'failing', 'add']);
    expect(chained.calls).toEqual(['p_1/s0+s1+s2']);
    expect(chained.records).toEqual(alone.records);
    expect(chained.records).toContainEqual(expect.objectContaining({ type: 'workflow.run_finished.v1', status: 'failed' }));
    expect(chained.records.filter((r) => (r as { type: string }).type === 'workflow.step_completed.v1')).toHaveLength(2);
  });

  it('a step with $.service.db is not chained: the server reads its store first, and it carries the steps after it', async () => {
    const { chained, alone } = await bothWays(['start', 'counting', 'add']);
    expect(chained.calls).toEqual(['p_1/s0', 'p_1/s1+s2']);
    expect(chained.records).toEqual(alone.records);
    expect(chained.records[3]).toMatchObject({ ret: { n: 42, started: 1, added: 1 } });
  });

  it('a $.respond ends the chain: its caller is answered before the next step runs', async () => {
    const { chained, alone } = await bothWays(['start', 'responding', 'add'], { customResponse: true });
    expect(chained.calls).toEqual(['p_1/s0+s1+s2', 'p_1/s2']);
    expect(chained.records).toEqual(alone.records);
    calls = [];
    const run = runner(true).start(started('run_respond', ['start', 'responding', 'add'], { customResponse: true }));
    expect(await run.response).toMatchObject({ status: 201 });
    await run.done;
  });

  it('a run with a timeout is not chained (each step gets what is left of it)', async () => {
    const { chained } = await bothWays(['start', 'add', 'add'], { timeoutSeconds: 30 });
    expect(chained.calls).toEqual(['p_1/s0', 'p_1/s1', 'p_1/s2']);
  });
});
