import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { event, EventTypes, MAX_LISTENER_HOPS, Streams } from '@app/domain';
import { dispatchIdFor } from '@app/projections';
import { EngineRuntime } from './engine-runtime';
import { MAX_DISPATCHES_IN_FLIGHT, MAX_DISPATCHES_PER_ACCOUNT, MAX_DISPATCHES_PER_LISTENER } from './listener-dispatcher';
import type { EmittedEventContext, StartFromEmitOutcome, WorkflowListenerPort } from './listener-ports';

/**
 * The `p_` listener path of the dispatcher, on the real runtime (real SQLite log, read models,
 * dispatcher): the workflows module is not in this build yet, so the port is a recording one
 * (the only stand-in; everything it is called by is the real thing).
 */
class RecordingPort implements WorkflowListenerPort {
  readonly calls: { workflowId: string; accountId: string; event: unknown; context: EmittedEventContext }[] = [];
  failNext = 0;
  /** What it answers: by default `started` (it records no start, so the dispatcher records the dispatch). */
  outcome: StartFromEmitOutcome = 'started';

  async startFromEmit(workflowId: string, accountId: string, ev: unknown, context: EmittedEventContext): Promise<StartFromEmitOutcome> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('workflow store unavailable');
    }
    this.calls.push({ workflowId, accountId, event: ev, context });
    return this.outcome;
  }
}

/** A port whose starts take a while, counting how many are in progress at once. */
class SlowPort extends RecordingPort {
  running = 0;
  maxRunning = 0;

  override async startFromEmit(workflowId: string, accountId: string, ev: unknown, context: EmittedEventContext): Promise<StartFromEmitOutcome> {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    await new Promise((r) => setTimeout(r, 2));
    this.running--;
    return super.startFromEmit(workflowId, accountId, ev, context);
  }
}

/**
 * A port whose answers depend on the workflow: `full` for those in `full`, and for those in
 * `gated` a start that waits until the gate opens (counting how many wait at once, per workflow).
 */
class RoomPort extends RecordingPort {
  readonly full = new Set<string>();
  readonly gated = new Set<string>();
  readonly waiting = new Map<string, number>();
  readonly maxWaiting = new Map<string, number>();
  fullAnswers = 0;
  private opened!: () => void;
  private gate = new Promise<void>((res) => { this.opened = res; });

  open(): void {
    this.opened();
  }

  override async startFromEmit(workflowId: string, accountId: string, ev: unknown, context: EmittedEventContext): Promise<StartFromEmitOutcome> {
    if (this.full.has(workflowId)) {
      this.fullAnswers++;
      return 'full';
    }
    if (this.gated.has(workflowId)) {
      const n = (this.waiting.get(workflowId) ?? 0) + 1;
      this.waiting.set(workflowId, n);
      this.maxWaiting.set(workflowId, Math.max(n, this.maxWaiting.get(workflowId) ?? 0));
      await this.gate;
      this.waiting.set(workflowId, this.waiting.get(workflowId)! - 1);
    }
    return super.startFromEmit(workflowId, accountId, ev, context);
  }

  emitsOf(workflowId: string): string[] {
    return this.calls.filter((c) => c.workflowId === workflowId).map((c) => c.context.emitId);
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('ListenerDispatcher: workflows as listeners (p_)', () => {
  let dataDir: string;
  let rt: EngineRuntime | undefined;

  const open = async (port?: WorkflowListenerPort): Promise<EngineRuntime> => {
    const runtime = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
    runtime.workflowListener = port;
    runtime.projections.start();
    await runtime.projections.caughtUp();
    runtime.goLive();
    runtime.dispatcher.start();
    rt = runtime;
    return runtime;
  };
  const close = async (): Promise<void> => {
    if (!rt) return;
    await rt.dispatcher.stop();
    await rt.projections.stop();
    await rt.store.close();
    rt = undefined;
  };
  const subscribe = (r: EngineRuntime, id: string, emitterId: string, listenerId: string, eventName = '', accountId = 'u_1') =>
    r.appendAndProject(Streams.subscription(id), [
      event(EventTypes.subscriptionCreated, { subscriptionId: id, accountId, emitterId, listenerId, eventName }),
    ]);
  /** `n` emits of source `sourceId` (account `accountId`) in one append, `em_<source>_<i>`. */
  const emitMany = (r: EngineRuntime, sourceId: string, accountId: string, n: number) =>
    r.appendAndProject(Streams.source(sourceId), [...Array(n).keys()].map((i) => event(EventTypes.sourceEventEmitted, {
      sourceId, accountId, emitId: `em_${sourceId}_${String(i).padStart(4, '0')}`, runId: 'run_1', summaryId: `1-${i}`, event: { i }, meta: {},
    })));
  const emitIds = (sourceId: string, n: number) => [...Array(n).keys()].map((i) => `em_${sourceId}_${String(i).padStart(4, '0')}`);
  const pendingOf = (r: EngineRuntime, listenerId: string) => r.queries.pendingListenerDispatches().filter((d) => d.listener_id === listenerId).length;
  const sourceEmit = (r: EngineRuntime, emitId: string, hops?: number) =>
    r.appendAndProject(Streams.source('dc_1'), [event(EventTypes.sourceEventEmitted, {
      sourceId: 'dc_1', accountId: 'u_1', emitId, runId: 'run_1', summaryId: '1-0', event: { n: emitId }, meta: {}, ...(hops ? { hops } : {}),
    })]);
  const dispatchRecords = async (r: EngineRuntime, listenerId: string) =>
    (await r.store.readStream(Streams.listener(listenerId))).map((e) => e.data);

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-dispatch-'));
  });
  afterEach(async () => {
    await close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts the subscribed workflow once per emit with the event and its context, then records the dispatch and settles the row', async () => {
    const port = new RecordingPort();
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_1');
    await subscribe(r, 'sub_2', 'dc_*', 'p_1');
    await sourceEmit(r, 'em_1', 2);
    await until(() => r.queries.pendingListenerDispatches().length === 0, 'the row settled');
    expect(port.calls).toEqual([{
      workflowId: 'p_1', accountId: 'u_1', event: { n: 'em_1' },
      context: { emitterId: 'dc_1', emitId: 'em_1', eventName: '', ts: expect.any(Number), hops: 3, dispatchId: dispatchIdFor('em_1', 'p_1') },
    }]);
    expect(await dispatchRecords(r, 'p_1')).toEqual([
      { dispatchId: dispatchIdFor('em_1', 'p_1'), listenerId: 'p_1', emitId: 'em_1', outcome: 'started' },
    ]);
  });

  it('a workflow that does not listen gets the dispatch recorded as skipped; a start that settled it gets no record', async () => {
    const port = new RecordingPort();
    port.outcome = 'skipped';
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_1');
    await sourceEmit(r, 'em_1');
    await until(() => r.queries.pendingListenerDispatches().length === 0, 'the row settled');
    expect(await dispatchRecords(r, 'p_1')).toEqual([
      { dispatchId: dispatchIdFor('em_1', 'p_1'), listenerId: 'p_1', emitId: 'em_1', outcome: 'skipped', reason: 'workflow p_1 does not listen' },
    ]);

    // `settled`: the start the port recorded names the dispatch and settles the row (here the
    // stand-in records that start itself, as the workflow runner does).
    port.outcome = 'settled';
    const settling = port.startFromEmit.bind(port);
    port.startFromEmit = async (workflowId, accountId, ev, context) => {
      const outcome = await settling(workflowId, accountId, ev, context);
      await r.appendAndProject(Streams.workflowRun('run_x'), [event(EventTypes.workflowRunStarted, {
        runId: 'run_x', workflowId, accountId, workflowVersion: 1, steps: [], customResponse: false, dispatchId: context.dispatchId,
        trigger: { event: ev, context: { emitter_id: context.emitterId, emit_id: context.emitId, ts: context.ts, trigger: 'emitter' } },
      })]);
      return outcome;
    };
    await sourceEmit(r, 'em_2');
    await until(() => r.queries.pendingListenerDispatches().length === 0 && port.calls.length === 2, 'the second row settled');
    expect((await dispatchRecords(r, 'p_1')).map((d) => (d as { emitId: string }).emitId)).toEqual(['em_1']);
  });

  it('a workflow emit reaches workflows listening to p_*; an emit at the hop cap reaches none', async () => {
    const port = new RecordingPort();
    const r = await open(port);
    await subscribe(r, 'sub_1', 'p_*', 'p_2', 'done');
    const wfEmit = (emitId: string, hops: number) => r.appendAndProject(Streams.workflowRun('run_9'), [event(EventTypes.workflowEventEmitted, {
      workflowId: 'p_9', accountId: 'u_1', runId: 'run_9', emitId, event: { ok: emitId }, meta: { name: 'done' }, hops,
    })]);
    await wfEmit('wem_capped', MAX_LISTENER_HOPS);
    await wfEmit('wem_1', 1);
    await until(() => port.calls.length === 1 && r.queries.pendingListenerDispatches().length === 0, 'the dispatch');
    expect(port.calls.map((c) => [c.workflowId, c.context.emitterId, c.context.emitId, c.context.eventName, c.context.hops]))
      .toEqual([['p_2', 'p_9', 'wem_1', 'done', 2]]);
  });

  it('a failing start is tried again until it succeeds, and is recorded once', async () => {
    const port = new RecordingPort();
    port.failNext = 2;
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_1');
    await sourceEmit(r, 'em_1');
    await until(() => r.queries.pendingListenerDispatches().length === 0, 'the row settled after retries');
    expect(port.calls).toHaveLength(1);
    expect(await dispatchRecords(r, 'p_1')).toHaveLength(1);
  });

  it('a dispatch still pending at shutdown (no workflow port yet) is handed over after the restart, once', async () => {
    let r = await open(undefined);
    await subscribe(r, 'sub_1', 'dc_1', 'p_1');
    await sourceEmit(r, 'em_1');
    expect(r.queries.pendingListenerDispatches().map((d) => d.listener_id)).toEqual(['p_1']);
    await close();

    const port = new RecordingPort();
    r = await open(port);
    await until(() => r.queries.pendingListenerDispatches().length === 0, 'the pending row handed over');
    expect(port.calls.map((c) => c.context.emitId)).toEqual(['em_1']);
    await close();

    const after = new RecordingPort();
    r = await open(after);
    await sourceEmit(r, 'em_2');
    await until(() => after.calls.length === 1 && r.queries.pendingListenerDispatches().length === 0, 'the next emit');
    expect(after.calls.map((c) => c.context.emitId)).toEqual(['em_2']);
  });

  it(`a flood of emits is handed over in full, once each, with at most ${MAX_DISPATCHES_IN_FLIGHT} in flight (the rest wait in the read model)`, async () => {
    const port = new SlowPort();
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_1');
    const n = MAX_DISPATCHES_IN_FLIGHT * 3;
    await r.appendAndProject(Streams.source('dc_1'), [...Array(n).keys()].map((i) => event(EventTypes.sourceEventEmitted, {
      sourceId: 'dc_1', accountId: 'u_1', emitId: `em_${i}`, runId: 'run_1', summaryId: `1-${i}`, event: { i }, meta: {},
    })));
    await until(() => port.calls.length >= n && r.queries.pendingListenerDispatches().length === 0, 'every dispatch', 30_000);
    expect(port.calls).toHaveLength(n);
    expect(new Set(port.calls.map((c) => c.context.emitId)).size).toBe(n);
    expect(port.maxRunning).toBeLessThanOrEqual(MAX_DISPATCHES_IN_FLIGHT);
    expect(port.maxRunning).toBeGreaterThan(1);
  });

  it('a workflow that answers full is handed nothing more until it has room; the others get their emits meanwhile; then it gets every emit once, in order', async () => {
    const port = new RoomPort();
    port.full.add('p_slow');
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_slow');
    await subscribe(r, 'sub_2', 'dc_1', 'p_fast');
    await subscribe(r, 'sub_3', 'dc_3', 'p_slow');
    await emitMany(r, 'dc_1', 'u_1', 100);
    await until(() => port.emitsOf('p_fast').length === 100 && pendingOf(r, 'p_fast') === 0, 'the other listener served');
    // The first answers of `full` came back while its first dispatches were in flight; none since.
    const asked = port.fullAnswers;
    expect(asked).toBeGreaterThanOrEqual(1);
    expect(asked).toBeLessThanOrEqual(MAX_DISPATCHES_PER_LISTENER);
    expect(r.dispatcher.isParked('p_slow')).toBe(true);
    // Emits that come while it is parked wait behind the others.
    await emitMany(r, 'dc_3', 'u_1', 5);
    await new Promise((res) => setTimeout(res, 700)); // longer than the first retry's delay
    expect(port.fullAnswers).toBe(asked);
    expect(pendingOf(r, 'p_slow')).toBe(105);
    expect(r.dispatcher.heldBy('p_slow')).toBe(0);

    port.full.delete('p_slow');
    r.dispatcher.listenerHasRoom('p_slow');
    await until(() => pendingOf(r, 'p_slow') === 0, 'the parked workflow served');
    expect(port.emitsOf('p_slow')).toEqual([...emitIds('dc_1', 100), ...emitIds('dc_3', 5)]);
    expect((await dispatchRecords(r, 'p_slow')).length).toBe(105);
  });

  it(`a listener whose starts hang holds at most ${MAX_DISPATCHES_PER_LISTENER}; another listener of the same emits gets every one meanwhile`, async () => {
    const port = new RoomPort();
    port.gated.add('p_slow');
    const r = await open(port);
    await subscribe(r, 'sub_1', 'dc_1', 'p_slow');
    await subscribe(r, 'sub_2', 'dc_1', 'p_fast');
    // More than the dispatcher may have in flight: without a share per listener the hung one
    // takes every slot and the other waits behind it in the read model.
    const n = MAX_DISPATCHES_IN_FLIGHT + 100;
    await emitMany(r, 'dc_1', 'u_1', n);
    await until(() => port.emitsOf('p_fast').length === n, 'the other listener served while the first hangs', 20_000);
    expect(port.maxWaiting.get('p_slow')).toBe(MAX_DISPATCHES_PER_LISTENER);
    expect(r.dispatcher.heldBy('p_slow')).toBe(MAX_DISPATCHES_PER_LISTENER);
    expect(pendingOf(r, 'p_slow')).toBe(n);

    port.open();
    await until(() => pendingOf(r, 'p_slow') === 0, 'the hung listener served', 20_000);
    expect(port.emitsOf('p_slow')).toEqual(emitIds('dc_1', n));
    expect(port.maxWaiting.get('p_slow')).toBe(MAX_DISPATCHES_PER_LISTENER);
  });

  it(`one account's hung listeners hold at most ${MAX_DISPATCHES_PER_ACCOUNT} together; another account's emits are handed over meanwhile`, async () => {
    const port = new RoomPort();
    const slow = ['p_s1', 'p_s2', 'p_s3', 'p_s4', 'p_s5', 'p_s6'];
    for (const id of slow) port.gated.add(id);
    const r = await open(port);
    for (const [i, id] of slow.entries()) await subscribe(r, `sub_s${i}`, 'dc_1', id);
    await subscribe(r, 'sub_other', 'dc_2', 'p_other', '', 'u_2');
    await emitMany(r, 'dc_1', 'u_1', 60);
    await until(() => [...port.waiting.values()].reduce((a, b) => a + b, 0) >= MAX_DISPATCHES_PER_ACCOUNT, 'the account at its share');
    await emitMany(r, 'dc_2', 'u_2', 50);
    await until(() => port.emitsOf('p_other').length === 50, "the other account's listener served");
    expect([...port.waiting.values()].reduce((a, b) => a + b, 0)).toBe(MAX_DISPATCHES_PER_ACCOUNT);
    for (const id of slow) expect(port.maxWaiting.get(id)).toBeLessThanOrEqual(MAX_DISPATCHES_PER_LISTENER);

    port.open();
    await until(() => r.queries.pendingListenerDispatches().length === 0, 'every slow listener served', 20_000);
    for (const id of slow) expect(port.emitsOf(id)).toEqual(emitIds('dc_1', 60));
  });

  it('after a restart with a backlog, a hung listener\'s older rows do not keep another listener\'s newer ones back', async () => {
    let r = await open(undefined);
    await subscribe(r, 'sub_1', 'dc_1', 'p_slow');
    await subscribe(r, 'sub_2', 'dc_2', 'p_fast');
    const older = MAX_DISPATCHES_IN_FLIGHT + 50;
    await emitMany(r, 'dc_1', 'u_1', older);
    await emitMany(r, 'dc_2', 'u_1', 50);
    await close();

    const port = new RoomPort();
    port.gated.add('p_slow');
    r = await open(port);
    // The start-up read takes the oldest rows first: p_slow's, of which it may hold 32.
    await until(() => port.emitsOf('p_fast').length === 50, "the newer listener's emits, while the older one hangs");
    expect(port.maxWaiting.get('p_slow')).toBe(MAX_DISPATCHES_PER_LISTENER);
    expect(pendingOf(r, 'p_slow')).toBe(older);
    port.open();
    await until(() => pendingOf(r, 'p_slow') === 0, 'the hung listener served', 20_000);
    expect(port.emitsOf('p_slow')).toEqual(emitIds('dc_1', older));
  });
});
