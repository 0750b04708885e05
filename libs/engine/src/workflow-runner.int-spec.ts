import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { Streams, WorkflowRunStarted } from '@app/domain';
import { uuidv8at } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { EngineRuntime } from './engine-runtime';
import { MAX_STARTS_HELD, WorkflowRunner } from './workflow-runner';

/**
 * The runner on the real runtime (SQLite log and read models). The sandbox is replaced by a step
 * executor that records which step ran with which props: the runner, not the sandbox, is under test.
 */
describe('WorkflowRunner', () => {
  let dataDir: string;
  let rt: EngineRuntime | undefined;
  let invoked: { run: string; step: string; props: Record<string, unknown> }[];
  let gate: Promise<void> | undefined;

  const ok = (returnValue: unknown, exports: Record<string, unknown> = {}): SandboxResult => ({
    ok: true, returnValue, exports, emits: [], logs: [], dbWrites: [], sends: [], durationMs: 1, cpuMs: 1,
  });
  const runner = (r: EngineRuntime, extra: Partial<ConstructorParameters<typeof WorkflowRunner>[0]> = {}) => new WorkflowRunner({
    store: r.store, box: r.box,
    component: (id) => ({ definition: { name: id, version: '1', type: 'action', props: [], hooks: [], methods: [], hasRun: true }, bundle: '', codeHash: id }),
    invoke: async (inv: SandboxInvocation) => {
      const step = inv.codeId;
      invoked.push({ run: (inv.action!.steps.trigger as { event: { run: string } }).event.run, step, props: inv.props });
      if (step === 'sc_slow' && gate) await gate;
      return ok({ from: step }, { [`${step}_out`]: inv.props.v ?? null });
    },
    sends: { perform: async () => ({ ok: true }) },
    stepDb: async () => ({}),
    stepTimeoutMs: 5000,
    concurrency: () => 1,
    ...extra,
  });
  const started = (runId: string, steps: string[]): WorkflowRunStarted => ({
    runId, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 1, customResponse: false,
    steps: steps.map((c, i) => ({ name: `s${i}`, componentId: c, configuredProps: i === 0 ? { v: 1 } : { v: `{{steps.s${i - 1}.${steps[i - 1]}_out}}` } })),
    trigger: { event: { run: runId }, context: { emitter_id: 'p_1', emit_id: runId, ts: 1, trigger: 'manual' } },
  });
  const types = async (r: EngineRuntime, runId: string) => (await r.store.readStream(Streams.workflowRun(runId))).map((e) => e.type);

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-runner-'));
    invoked = [];
    gate = undefined;
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
  });
  afterEach(async () => {
    await rt?.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the steps in order, each seeing the earlier ones, and records every outcome and the end', async () => {
    const run = runner(rt!).start(started('run_a', ['sc_one', 'sc_two']));
    await run.recorded;
    await run.done;
    expect(invoked.map((i) => [i.step, i.props.v])).toEqual([['sc_one', 1], ['sc_two', 1]]);
    expect(await types(rt!, 'run_a')).toEqual(['workflow.run_started.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.run_finished.v1']);
  });

  it('a second start of the same run id (a repeated dispatch) is refused and runs nothing', async () => {
    const r = runner(rt!);
    const first = r.start(started('run_dup', ['sc_one']));
    await first.done;
    const again = r.start(started('run_dup', ['sc_one']));
    const refused = await again.recorded.then(() => undefined, (err: unknown) => err);
    expect(WorkflowRunner.isDuplicate(refused)).toBe(true);
    expect(invoked).toHaveLength(1);
  });

  describe('the run id of a run started by an emit', () => {
    const emitAt = (ms: number) => uuidv8at(ms, 'test', String(ms));

    it('starts with the emit id\'s time, is the same for every dispatch of the emit, and differs by workflow', () => {
      const emitId = emitAt(1764950400000);
      const id = WorkflowRunner.runIdForEmit('p_1', emitId);
      expect(id).toMatch(/^run_019aef3ddc008[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
      expect(WorkflowRunner.runIdForEmit('p_1', emitId)).toBe(id);
      expect(WorkflowRunner.runIdForEmit('p_2', emitId)).not.toBe(id);
      expect(WorkflowRunner.runIdForEmit('p_1', emitAt(1764950400001)) > id).toBe(true);
    });

    it('is the id an older build gave when that build started the run already; the log is read only for emits older than the runner', async () => {
      const r = runner(rt!);
      const old = emitAt(Date.now() - 60_000);
      const oldUnstarted = emitAt(Date.now() - 60_000 + 1);
      const recent = emitAt(Date.now() + 1);
      const random = '5f0c9d2e-1b3a-5c4d-8e6f-7a8b9c0d1e2f';
      // An older build started runs for `old`, `recent` (as if its clock were ahead) and `random`
      // under the ids it derived, and stopped before recording their dispatches.
      for (const emitId of [old, recent, random]) {
        const legacy = WorkflowRunner.legacyRunIdForEmit('p_1', emitId);
        const first = r.start(started(legacy, ['sc_one']));
        await first.done;
      }
      expect(await r.runIdForEmitted('p_1', old)).toBe(WorkflowRunner.legacyRunIdForEmit('p_1', old));
      expect(await r.runIdForEmitted('p_1', random)).toBe(WorkflowRunner.legacyRunIdForEmit('p_1', random));
      expect(await r.runIdForEmitted('p_1', oldUnstarted)).toBe(WorkflowRunner.runIdForEmit('p_1', oldUnstarted));
      // An emit recorded after the runner was made cannot have been dispatched by an older build:
      // its id comes at once, without a read.
      expect(r.runIdForEmitted('p_1', recent)).toBe(WorkflowRunner.runIdForEmit('p_1', recent));
      // Starting the run again under the id it is given is refused as a repeat: nothing runs twice.
      const again = r.start(started(await r.runIdForEmitted('p_1', old), ['sc_one']));
      expect(WorkflowRunner.isDuplicate(await again.recorded.then(() => undefined, (err: unknown) => err))).toBe(true);
      expect(invoked).toHaveLength(3);
    });
  });

  it('a run whose first step is recorded resumes at the second step in a new runner (after a restart)', async () => {
    gate = new Promise(() => undefined);
    const run = runner(rt!).start(started('run_c', ['sc_one', 'sc_slow']));
    await run.recorded;
    const end = Date.now() + 5000;
    while (invoked.length < 2 && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    // The first runner is stuck in step 2 (as if the process died there); a fresh one resumes.
    gate = undefined;
    invoked = [];
    const fresh = runner(rt!);
    fresh.resume('p_1', 'run_c');
    const until = Date.now() + 5000;
    while (!(await types(rt!, 'run_c')).includes('workflow.run_finished.v1') && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    expect(invoked.map((i) => i.step)).toEqual(['sc_slow']);
    expect(invoked[0].props.v).toBe(1);
  });

  it('at concurrency 1 a workflow\'s runs go one at a time, in the order they were started', async () => {
    let open!: () => void;
    gate = new Promise((res) => { open = res; });
    const r = runner(rt!);
    const runs = ['run_1', 'run_2', 'run_3'].map((id) => r.start(started(id, ['sc_slow', 'sc_one'])));
    await Promise.all(runs.map((x) => x.recorded));
    await new Promise((res) => setTimeout(res, 50));
    expect(invoked.map((i) => i.run)).toEqual(['run_1']);
    open();
    await Promise.all(runs.map((x) => x.done));
    expect(invoked.map((i) => `${i.run}/${i.step}`)).toEqual(['run_1/sc_slow', 'run_1/sc_one', 'run_2/sc_slow', 'run_2/sc_one', 'run_3/sc_slow', 'run_3/sc_one']);
  });

  it.each([
    ['runs from dispatches (queued once recorded)', false],
    ['new runs (queued while their start lingers)', true],
  ])(`a lane's backlog holds at most ${MAX_STARTS_HELD} starts in memory, the others are read back from the log: %s run in order with their own events`, async (_kind, fresh) => {
    let open!: () => void;
    gate = new Promise((res) => { open = res; });
    const r = runner(rt!);
    const n = MAX_STARTS_HELD * 2 + 10;
    const ids = [...Array(n).keys()].map((i) => `run_${String(i).padStart(4, '0')}`);
    const runs = ids.map((id) => r.start(started(id, ['sc_slow', 'sc_one']), { fresh }));
    await Promise.all(runs.map((x) => x.recorded));
    // The first run holds the lane at its gate; the others wait, most of them without their start.
    expect(r.startsHeld).toBeLessThanOrEqual(MAX_STARTS_HELD);
    open();
    await Promise.all(runs.map((x) => x.done));
    expect(r.startsHeld).toBe(0);
    // Each run saw its own trigger event (read back or not), and they went one at a time, in order.
    expect(invoked.filter((i) => i.step === 'sc_slow').map((i) => i.run)).toEqual(ids);
    expect(invoked.filter((i) => i.step === 'sc_one').map((i) => i.run)).toEqual(ids);
    for (const id of [ids[1], ids[n - 1]]) {
      expect(await types(rt!, id)).toEqual(['workflow.run_started.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.run_finished.v1']);
    }
  });

  it.each([
    ['runs from dispatches (counted from their start on)', false],
    ['new runs', true],
  ])('a lane holding maxRunsWaiting runs has no room; once it refused one, it says so when drained to half: %s', async (_kind, fresh) => {
    let open!: () => void;
    gate = new Promise((res) => { open = res; });
    const rooms: string[] = [];
    const r = runner(rt!, { maxRunsWaiting: 10, onRoom: (id) => rooms.push(id) });
    expect(r.hasRoom('p_1')).toBe(true);
    const runs = [];
    // Taken while the earlier starts are still being recorded: they count already.
    while (r.hasRoom('p_1')) runs.push(r.start(started(`run_${runs.length}`, ['sc_slow']), { fresh }));
    expect(runs).toHaveLength(10);
    expect(r.runsWaiting('p_1')).toBe(10);
    await Promise.all(runs.map((x) => x.recorded));
    // Another workflow's lane is not this one's.
    expect(r.hasRoom('p_2')).toBe(true);
    expect(r.hasRoom('p_1')).toBe(false);
    expect(rooms).toEqual([]);
    open();
    await Promise.all(runs.map((x) => x.done));
    // Called once, when the lane came down to 5 (not at every run after that).
    expect(rooms).toEqual(['p_1']);
    expect(r.runsWaiting('p_1')).toBe(0);
    expect(r.hasRoom('p_1')).toBe(true);
  });

  it('a start that is refused (a repeated run id) gives its place in the lane back', async () => {
    const rooms: string[] = [];
    const r = runner(rt!, { maxRunsWaiting: 2, onRoom: (id) => rooms.push(id) });
    await r.start(started('run_once', ['sc_one'])).done;
    const a = r.start(started('run_once', ['sc_one']));
    const b = r.start(started('run_once', ['sc_one']));
    expect(r.hasRoom('p_1')).toBe(false);
    await Promise.all([a.recorded.catch(() => undefined), b.recorded.catch(() => undefined)]);
    expect(r.runsWaiting('p_1')).toBe(0);
    expect(r.hasRoom('p_1')).toBe(true);
    expect(rooms).toEqual(['p_1']);
  });
});
