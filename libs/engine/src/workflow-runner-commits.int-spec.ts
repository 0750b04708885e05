import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { QueuedSend, Streams, WorkflowRunStarted } from '@app/domain';
import type { SqliteEventStore } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { EngineRuntime } from './engine-runtime';
import { durabilityOf, WorkflowRunner } from './workflow-runner';

/**
 * How a run's records reach the log (`durabilityOf`, `recordLingerMs`): on the real runtime with
 * a SQLite file that fsyncs (`full`), counting the store's commits and fsyncs. Steps answer a few
 * milliseconds after they are invoked, as a sandbox would.
 */
describe('WorkflowRunner: a run\'s records share commits and fsyncs', () => {
  let dataDir: string;
  let rt: EngineRuntime;
  let store: SqliteEventStore;
  /** Log head after each commit that appended events. */
  let commits: bigint[];
  /** Sends of each step, by component id. */
  let stepSends: Record<string, QueuedSend[]>;
  /** fsyncs done when each external send was performed. */
  let atSend: number[];

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-run-commits-'));
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'full' }), { sandbox: false });
    store = rt.store as unknown as SqliteEventStore;
    commits = [];
    store.onAppended((head) => commits.push(head));
    stepSends = {};
    atSend = [];
  });
  afterEach(async () => {
    await rt.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const runner = (recordLingerMs: number) => new WorkflowRunner({
    store: rt.store, box: rt.box,
    // sc_db reads its $.service.db.
    component: (id) => ({ definition: { name: id, version: '1', type: 'action', props: id === 'sc_db' ? [{ name: 'db', type: '$.service.db' }] : [], hooks: [], methods: [], hasRun: true }, bundle: '', codeHash: id }),
    invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => {
      await new Promise((res) => setTimeout(res, 3));
      return { ok: true, returnValue: inv.codeId, exports: {}, emits: [], logs: [], dbWrites: [], sends: (stepSends[inv.codeId] ?? []) as SandboxResult['sends'], durationMs: 3, cpuMs: 1 };
    },
    sends: {
      perform: async () => {
        atSend.push(store.fsyncCount);
        return { ok: true };
      },
    },
    stepDb: async () => ({}),
    stepTimeoutMs: 5000,
    concurrency: () => 1,
    recordLingerMs,
  });

  const started = (runId: string, steps: string[]): WorkflowRunStarted => ({
    runId, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 1, customResponse: false,
    steps: steps.map((c, i) => ({ name: `s${i}`, componentId: c, configuredProps: {} })),
    trigger: { event: {}, context: { emitter_id: 'p_1', emit_id: runId, ts: 1, trigger: 'manual' } },
  });

  /** Runs `steps` to their end: commits and fsyncs of the run's execution (after its start was recorded). */
  async function execute(r: WorkflowRunner, runId: string, steps: string[]): Promise<{ commits: number; fsyncs: number }> {
    const run = r.start(started(runId, steps));
    await run.recorded;
    const c0 = commits.length;
    const f0 = store.fsyncCount;
    await run.done;
    return { commits: commits.length - c0, fsyncs: store.fsyncCount - f0 };
  }

  /** Starts a run (`fresh`: a run id made for it) and runs it to its end: commits and fsyncs from before its start. */
  async function whole(runId: string, steps: string[], fresh: boolean): Promise<{ commits: number; fsyncs: number }> {
    const c0 = commits.length;
    const f0 = store.fsyncCount;
    const run = runner(100).start(started(runId, steps), { fresh });
    await run.recorded;
    await run.done;
    return { commits: commits.length - c0, fsyncs: store.fsyncCount - f0 };
  }

  const types = async (runId: string) => (await rt.store.readStream(Streams.workflowRun(runId))).map((e) => e.type);

  it('three steps without sends and the end: one commit and one fsync, the end\'s', async () => {
    expect(await execute(runner(100), 'run_a', ['sc_1', 'sc_2', 'sc_3'])).toEqual({ commits: 1, fsyncs: 1 });
    expect(await types('run_a')).toEqual([
      'workflow.run_started.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.run_finished.v1',
    ]);
  });

  it('without the linger each step commits on its own, and still only the end is fsynced', async () => {
    // The last step's record and the end are appended in the same turn: they share a commit anyway.
    expect(await execute(runner(0), 'run_b', ['sc_1', 'sc_2', 'sc_3'])).toEqual({ commits: 3, fsyncs: 1 });
  });

  it('a step with an emit shares the commit too: the emit is derived again from the run', async () => {
    stepSends = { sc_emit: [{ kind: 'emit', params: { raw_event: { hello: 1 } } }] };
    expect(await execute(runner(100), 'run_c', ['sc_1', 'sc_emit'])).toEqual({ commits: 1, fsyncs: 1 });
    expect(await types('run_c')).toContain('workflow.event_emitted.v1');
  });

  it('a send that leaves the server is performed only once its step\'s record is fsynced', async () => {
    stepSends = { sc_http: [{ kind: 'http', params: { url: 'https://example.test/' } }] };
    const r = runner(100);
    const run = r.start(started('run_d', ['sc_1', 'sc_http']));
    await run.recorded;
    const f0 = store.fsyncCount;
    await run.done;
    expect(atSend).toHaveLength(1);
    // sc_1's record and sc_http's, written together (sc_1's lingered), then fsynced before the send.
    expect(atSend[0]).toBe(f0 + 1);
    // After the send: its record and the end, one more fsync.
    expect(store.fsyncCount).toBe(f0 + 2);
  });

  it('a new run (its id made for it) goes on while its start lingers: start, three steps and end share one commit and one fsync', async () => {
    expect(await whole('run_f', ['sc_1', 'sc_2', 'sc_3'], true)).toEqual({ commits: 1, fsyncs: 1 });
    expect(await types('run_f')).toEqual([
      'workflow.run_started.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.step_completed.v1', 'workflow.run_finished.v1',
    ]);
  });

  it('a run id that may have been started before (a dispatch\'s): the start is durable before the run goes on', async () => {
    expect(await whole('run_n', ['sc_1', 'sc_2', 'sc_3'], false)).toEqual({ commits: 2, fsyncs: 2 });
  });

  it('a run that settles a dispatch: its start is acknowledged at its commit (no caller waits for its fsync), other starts at the fsync', async () => {
    const asked: [string, string | undefined][] = [];
    const append = store.append.bind(store);
    store.append = (stream, events, options) => {
      for (const e of events) asked.push([e.type, options?.durability]);
      return append(stream, events, options);
    };
    await runner(100).start({ ...started('run_s', ['sc_1']), dispatchId: 'dispatch-1' }).done;
    await runner(100).start(started('run_t', ['sc_1']), { fresh: true }).done;
    await runner(100).start(started('run_u', ['sc_1'])).done;
    expect(asked).toEqual([
      ['workflow.run_started.v1', 'commit'], ['workflow.step_completed.v1', 'commit'], ['workflow.run_finished.v1', 'log'],
      ['workflow.run_started.v1', 'log'], ['workflow.step_completed.v1', 'commit'], ['workflow.run_finished.v1', 'log'],
      ['workflow.run_started.v1', 'log'], ['workflow.step_completed.v1', 'commit'], ['workflow.run_finished.v1', 'log'],
    ]);
    expect((await rt.store.readStream(Streams.workflowRun('run_s')))[0].data).toMatchObject({ dispatchId: 'dispatch-1' });
  });

  it('a new run whose first step reads its $.service.db does not start early (the read waits for the start)', async () => {
    expect(await whole('run_db', ['sc_db', 'sc_2'], true)).toEqual({ commits: 2, fsyncs: 2 });
  });

  it('a new run\'s send that leaves the server waits for the start and its step to be fsynced', async () => {
    stepSends = { sc_http: [{ kind: 'http', params: { url: 'https://example.test/' } }] };
    const f0 = store.fsyncCount;
    expect(await whole('run_h', ['sc_http'], true)).toEqual({ commits: 2, fsyncs: 2 });
    // The start and the step's record, one commit and its fsync, then the send; its record and the end after it.
    expect(atSend).toEqual([f0 + 1]);
  });
});

describe('durabilityOf', () => {
  const step = (kinds: QueuedSend['kind'][]) => ({
    type: 'recordStep' as const,
    outcome: { runId: 'r', workflowId: 'p', index: 0, name: 's', status: 'succeeded' as const, exports: {}, logs: [], durationMs: 1, sends: kinds.map((kind) => ({ kind, params: {} })) },
  });
  const send = (kind: QueuedSend['kind']) => ({ type: 'recordSend' as const, outcome: { runId: 'r', workflowId: 'p', stepIndex: 0, sendIndex: 0, kind, ok: true } });

  it('a step\'s outcome waits for its commit only, unless it has a send that leaves the server', () => {
    expect(durabilityOf(step([]))).toBe('commit');
    expect(durabilityOf(step(['emit', 'sse']))).toBe('commit');
    for (const kind of ['http', 'email', 's3'] as const) expect(durabilityOf(step(['emit', kind]))).toBe('log');
  });

  it('the record of a send that left the server, the start and the end wait for the fsync', () => {
    expect(durabilityOf(send('emit'))).toBe('commit');
    expect(durabilityOf(send('sse'))).toBe('commit');
    expect(durabilityOf(send('http'))).toBe('log');
    expect(durabilityOf({ type: 'finish', now: 1, errorEmitId: 'x' })).toBe('log');
    expect(durabilityOf({ type: 'start', started: {} as WorkflowRunStarted })).toBe('log');
    // Unless the run was started by a listener dispatch: nobody waits for that start.
    expect(durabilityOf({ type: 'start', started: { dispatchId: 'd' } as WorkflowRunStarted })).toBe('commit');
  });
});
