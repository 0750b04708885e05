import type { EventStore } from '@app/event-store';
import { isUuidv7, streamPages, uuidv7, uuidv8fromV7, uuidv8ordered } from '@app/event-store';
import {
  ComponentDefinition, decideSource, emitRecordJson, EventTypes, evolveSource, evolveSourceFromStored, fitDbWrites, initialSourceState, inTransition,
  NewSourceEvent, plannedHooks, RunLog, RunTrigger, runRefusal, runtimeProps, SecretBox, SluiceEvent, SourceCommand, SourceConfig,
  SourceEventEmitted, SourceHook, SourceRejection, sourceSnapshot, SourceState, sourceStateFromSnapshot, SourceStatus, Streams,
} from '@app/domain';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import type { SourceSnapshots, StoredSourceSnapshot } from './source-snapshots';

/**
 * Events of a source's stream between two snapshots of its state, at least. Loading a source
 * folds at most this many events after its snapshot (about 35 ms here when they are runs).
 */
export const SNAPSHOT_EVERY_EVENTS = 10_000;
/**
 * Bytes of snapshot per event folded since the last one, at most: a source with a large db
 * (up to SLUICE_MAX_DB_BYTES_PER_SOURCE) is snapshotted less often, so snapshots never cost much
 * more to write than the events they save folding.
 */
const SNAPSHOT_BYTES_PER_EVENT = 200;

/** What an actor needs from the rest of the engine. */
export interface SourceActorDeps {
  store: EventStore<SluiceEvent>;
  box: SecretBox;
  publicUrl(): string;
  component(id: string): ActorComponent | undefined;
  /**
   * Runs an invocation for the source's account (`EngineRuntime.invoke`). `holdable`: the run
   * serves an HTTP request whose caller does not wait for it, so its write to the worker may wait
   * briefly for the next ones.
   */
  invoke(inv: SandboxInvocation, accountId: string | undefined, holdable?: boolean): Promise<SandboxResult>;
  /** UTF-8 bytes a source's db may hold (SLUICE_MAX_DB_BYTES_PER_SOURCE). */
  maxDbBytesPerSource: number;
  /** Where the actor keeps snapshots of its state; without, every load folds the whole stream. */
  snapshots?: SourceSnapshots;
  /** Events between snapshots, at least ({@link SNAPSHOT_EVERY_EVENTS} by default). */
  snapshotEvery?: number;
  /**
   * How long the record of a run that served a durable request may wait to share its commit with
   * the next requests, while they arrive fast enough (ms; default 0, never). The engine gives
   * the requests' own linger (SLUICE_REQUEST_LINGER_MS).
   */
  recordLingerMs?: number;
}

/** The outcome of one run turn, for callers that wait (custom responses, run now). */
export interface RunOutcome {
  result: SandboxResult;
  emitted: SourceEventEmitted[];
  logs: RunLog[];
}

/** A lifecycle hook that failed, with its logs. */
export class HookFailedError extends Error {
  constructor(readonly hook: string, readonly error: { name: string; message: string }, readonly logs: RunLog[]) {
    super(`${hook} hook failed: ${error.name}: ${error.message}`);
    this.name = 'HookFailedError';
  }
}

/** A command the source's `decideSource` refused (an update or delete of a source that is not deployed). */
export class SourceCommandRejectedError extends Error {
  readonly code: SourceRejection['code'];

  constructor(rejection: SourceRejection) {
    super(rejection.message);
    this.code = rejection.code;
  }
}

/** What an actor needs of a deployed component: its definition, its bundle and the bundle's hash. */
type ActorComponent = { definition: ComponentDefinition; bundle: string; codeHash: string };

/** The parts of an invocation one configuration of a source always sends, with what they were made from. */
type InvocationTemplate = Required<Pick<SandboxInvocation, 'codeId' | 'instanceId' | 'bundle' | 'props' | 'httpProps' | 'dbProps' | 'timerProps'>> & {
  config: SourceConfig;
  comp: ActorComponent;
  publicUrl: string;
};

type Trigger = RunTrigger;

const RUN_ID_NS = 'sluice.run-of-request';
const EMIT_ID_NS = 'sluice.emit-of-request';
/** Namespace of the ids derived from an HTTP request's UUIDv7: the run's is index 0, the n-th emit's n + 1. */
const IDS_OF_REQUEST_NS = 'sluice.ids-of-request';

/**
 * The ids of a run that serves a durable request (an HTTP request, a listener dispatch): derived
 * from the request, so a re-run after its record was lost (see `start`) gives the run and its
 * emits the same ids again, and so its deliveries the same `webhook-id`s. They sort with the
 * request's id. An HTTP request's id is a UUIDv7, and the ids are derived from its bits without a
 * hash (`uuidv8fromV7`); a listener dispatch's is not, and they are hashed from it
 * (`uuidv8ordered`), keeping its first 48 bits: a dispatch of an emit recorded with ordered ids
 * starts with the emit's timestamp. Other runs (timers, run now) get fresh UUIDv7s.
 */
export function runIdsFor(requestId: string | undefined): { runId: string; newEmitId: () => string } {
  if (requestId === undefined) return { runId: uuidv7(), newEmitId: uuidv7 };
  let n = 0;
  if (isUuidv7(requestId)) {
    return { runId: uuidv8fromV7(requestId, IDS_OF_REQUEST_NS, 0), newEmitId: () => uuidv8fromV7(requestId, IDS_OF_REQUEST_NS, ++n) };
  }
  return { runId: uuidv8ordered(requestId, RUN_ID_NS, requestId), newEmitId: () => uuidv8ordered(requestId, EMIT_ID_NS, `${requestId}/${n++}`) };
}

/**
 * One deployed source as an actor: its state is folded from `source-<dc>`, its commands are
 * handled one at a time from a mailbox, and each turn ends with one append of everything it
 * produced, with the expected stream revision. So dedupe and db state need no locks and a
 * second writer gets a conflict instead of corrupting state.
 */
export class SourceActor {
  private state?: SourceState;
  /** The invocation parts of the current configuration ({@link invocationTemplate}). */
  private template?: InvocationTemplate;
  private mailbox: Promise<unknown> = Promise.resolve();
  /** Revision of the last snapshot taken or loaded (-1n: none), and events to wait after it for the next. */
  private snapshotAt = -1n;
  private snapshotGap: bigint;
  private readonly snapshotEvery: bigint;

  constructor(readonly sourceId: string, private readonly deps: SourceActorDeps) {
    this.snapshotEvery = BigInt(deps.snapshotEvery ?? SNAPSHOT_EVERY_EVENTS);
    this.snapshotGap = this.snapshotEvery;
  }

  /** Queues a turn; turns run strictly one after another. */
  private enqueue<T>(turn: () => Promise<T>): Promise<T> {
    const next = this.mailbox.then(turn, turn);
    this.mailbox = next.catch(() => undefined);
    return next;
  }

  /** The source's state: its snapshot (when the log agrees with it) and the events after it, folded. */
  private async load(): Promise<SourceState> {
    if (this.state) return this.state;
    const stream = Streams.source(this.sourceId);
    const restored = await this.restore(stream);
    const state = restored ?? initialSourceState(this.sourceId);
    this.snapshotAt = state.revision;
    // Page by page: the stream gains events with every run, and must not be held whole in memory.
    for await (const page of streamPages(this.deps.store, stream, undefined, state.revision + 1n)) {
      for (const e of page) evolveSourceFromStored(state, e);
    }
    this.state = state;
    return state;
  }

  /**
   * The state in the source's snapshot, if the log holds the event the snapshot names at the
   * revision it covers; otherwise the snapshot is dropped (a log restored from a backup, a
   * snapshot of another format) and undefined returned: fold from the first event.
   */
  private async restore(stream: string): Promise<SourceState | undefined> {
    const snapshots = this.deps.snapshots;
    const stored = snapshots?.get(this.sourceId);
    if (!snapshots || !stored) return undefined;
    const [at] = await this.deps.store.readStream(stream, { fromRevision: stored.revision, maxCount: 1 });
    let state: SourceState | undefined;
    if (at && at.revision === stored.revision && at.id === stored.eventId) {
      try {
        state = sourceStateFromSnapshot(JSON.parse(stored.state), stored.revision);
      } catch {
        state = undefined;
      }
    }
    if (!state) snapshots.delete(this.sourceId);
    return state;
  }

  /**
   * A snapshot of `state` when enough events were folded since the last one; taken now (the
   * state moves on with the next turn) and written once the events it covers are committed.
   */
  private snapshotDue(state: SourceState, lastEventId: string): StoredSourceSnapshot | undefined {
    if (!this.deps.snapshots || state.revision - this.snapshotAt < this.snapshotGap) return undefined;
    const json = JSON.stringify(sourceSnapshot(state));
    this.snapshotAt = state.revision;
    const bySize = BigInt(Math.ceil(json.length / SNAPSHOT_BYTES_PER_EVENT));
    this.snapshotGap = bySize > this.snapshotEvery ? bySize : this.snapshotEvery;
    return { revision: state.revision, eventId: lastEventId, state: json };
  }

  private saveSnapshot(snapshot: StoredSourceSnapshot): void {
    try {
      if (this.deps.snapshots!.put(this.sourceId, snapshot)) return;
    } catch (err) {
      console.error(`snapshot of ${this.sourceId} not written (it is not needed: the next load folds more of the log)`, err);
    }
    // Not written: the next turn takes another.
    if (this.snapshotAt === snapshot.revision) this.snapshotAt = -1n;
  }

  /**
   * Starts the append of a turn's events with the expected revision and folds them at once, so
   * the next turn can start before this one is durable: consecutive turns then share one group
   * commit. Appends of one stream are applied in the order they were started, so the expected
   * revisions line up. If an append fails, the cached state is dropped and reloaded from the log
   * by the next turn (the runs it carried stay pending and are resumed on restart).
   */
  private stage(events: NewSourceEvent[], causationId?: string, actor?: string, durability: 'log' | 'commit' = 'log', afterSyncInProgress = false): Promise<void> {
    const state = this.state!;
    // Object.assign, not a spread followed by new members: see `metadataWithTime` in append-rules.ts.
    // An emit's record is written with its payload's text, which its deliveries then share (emitRecordJson).
    const stamped = events.map((e) => Object.assign({}, e, { id: e.id ?? uuidv7(), metadata: { causationId, actor: actor ?? this.sourceId, ...e.metadata } },
      e.type === EventTypes.sourceEventEmitted ? { dataJson: emitRecordJson(e.data), dataJsonIsData: true as const } : undefined));
    // A run's record acknowledged at its commit waits for the next requests and their records
    // to share that commit, while requests come fast enough (AppendOptions.lingerOnlyWhenBusy).
    // The same shape of options for every append made here, lingering or not.
    const lingers = durability === 'commit' && !afterSyncInProgress;
    const append = this.deps.store.append(Streams.source(this.sourceId), stamped, {
      expectedRevision: state.revision < 0n ? 'no_stream' : state.revision, durability, afterSyncInProgress,
      lingerMs: lingers ? this.deps.recordLingerMs ?? 0 : 0, lingerOnlyWhenBusy: lingers,
    });
    let rev = state.revision;
    for (const e of stamped) evolveSource(state, e, ++rev);
    const snapshot = stamped.length > 0 ? this.snapshotDue(state, stamped[stamped.length - 1].id) : undefined;
    const deleted = stamped.some((e) => e.type === EventTypes.sourceDeleted);
    return append.then(
      () => {
        if (snapshot) this.saveSnapshot(snapshot);
        // A deleted source's snapshot would only take room.
        if (deleted) this.deps.snapshots?.delete(this.sourceId);
      },
      (err) => {
        if (this.state === state) this.state = undefined;
        throw err;
      },
    );
  }

  /** Appends a turn's events and waits until they are durable. */
  private async commit(events: NewSourceEvent[], causationId?: string, actor?: string): Promise<void> {
    await this.load();
    await this.stage(events, causationId, actor);
  }

  /** The events `decideSource` records for a command on this state; a refusal is thrown. */
  private decide(state: SourceState, command: SourceCommand): NewSourceEvent[] {
    const decision = decideSource(state, command);
    if ('rejected' in decision) throw new SourceCommandRejectedError(decision.rejected);
    return decision.events;
  }

  /**
   * `eventJson`: `JSON.stringify(event)` when the caller made it (an HTTP request): sent instead of
   * `event`; without its `bodyRaw` and `body` when `bodyFromRaw`, the invocation then carrying
   * `event.bodyRaw` on its own (see {@link SandboxInvocation.bodyFromRaw}).
   */
  private invocation(config: SourceConfig, entry: SandboxInvocation['entry'], event: unknown, state: SourceState, eventJson?: string, bodyFromRaw = false) {
    const comp = this.deps.component(config.componentId);
    if (!comp) throw new Error(`component ${config.componentId} of ${this.sourceId} is missing`);
    const t = this.invocationTemplate(config, comp);
    const inv: SandboxInvocation = {
      codeId: t.codeId,
      instanceId: t.instanceId,
      bundle: t.bundle,
      entry,
      event: eventJson === undefined ? event : undefined,
      eventJson,
      bodyFromRaw: eventJson !== undefined && bodyFromRaw,
      // The raw body beside the event's text, which leaves it out then (`requestTexts`).
      bodyRaw: eventJson !== undefined && bodyFromRaw ? (event as { bodyRaw: string }).bodyRaw : undefined,
      props: t.props,
      httpProps: t.httpProps,
      dbProps: t.dbProps,
      timerProps: t.timerProps,
      db: Object.fromEntries(state.db),
      dbBytes: state.dbBytes,
      // The template's objects are never changed: the supervisor sends their text, made once.
      stableConfig: true,
    };
    return { inv, comp };
  }

  /**
   * What every invocation of one configuration of the source carries: its code, its instance and
   * its props (secret ones opened). Made once per configuration, component and public URL, where
   * it was made again for every run (a decryption per secret prop per run). A deploy or update
   * replaces `config`, so a new configuration makes a new template; the objects are shared by
   * the invocations and never changed (auth resolution copies props before it adds to them).
   */
  private invocationTemplate(config: SourceConfig, comp: ActorComponent): InvocationTemplate {
    const publicUrl = this.deps.publicUrl();
    const known = this.template;
    if (known && known.config === config && known.comp === comp && known.publicUrl === publicUrl) return known;
    const httpProps: InvocationTemplate['httpProps'] = {};
    const dbProps: string[] = [];
    const timerProps: Record<string, unknown> = {};
    for (const p of comp.definition.props) {
      if (p.type === '$.interface.http') {
        httpProps[p.name] = { endpoint: `${publicUrl}/e/${config.endpointKey}`, customResponse: Boolean(p.customResponse) };
      } else if (p.type === '$.service.db') dbProps.push(p.name);
      else if (p.type === '$.interface.timer') timerProps[p.name] = config.configuredProps[p.name] ?? p.default ?? null;
    }
    const template: InvocationTemplate = {
      config, comp, publicUrl,
      codeId: comp.codeHash,
      // The isolate (and its module state) belongs to this source alone, even if others deploy the same code.
      instanceId: `${this.sourceId}@${comp.codeHash}`,
      bundle: comp.bundle,
      props: runtimeProps(config.configuredProps, this.deps.box),
      httpProps, dbProps, timerProps,
    };
    this.template = template;
    return template;
  }

  /**
   * Runs the source for one trigger and records the run, its emits (ordered and deduped), its db
   * writes and its logs in one append. A failing run is recorded and also emitted on `$errors`.
   */
  run(trigger: Trigger, event: unknown, requestId?: string, hops?: number): Promise<RunOutcome | undefined> {
    const { outcome, durable } = this.start(trigger, event, requestId, hops);
    return outcome.then(async (o) => {
      await durable;
      return o;
    });
  }

  /**
   * Starts a run and returns its outcome as soon as the run is over and its append is queued
   * (`outcome`), and separately when that append is durable (`durable`). Custom HTTP responses
   * are sent on `outcome`: a crash before `durable` re-runs the request after restart. `hops`:
   * the listener hops that led to this run (a listener hearing an emit), carried by its emits.
   * `customResponse`: the caller waits for this run's answer (see {@link AppendOptions.afterSyncInProgress}).
   * `eventJson`: `JSON.stringify(event)`, when the caller has it (see {@link SandboxInvocation.eventJson}),
   * or the event's text without its body when `bodyFromRaw` (see {@link SandboxInvocation.bodyFromRaw}).
   * `ran`: the run's result as soon as it is final, before it is decided and its append queued
   * (undefined when the run was refused): what a custom response is answered from, so that the
   * caller does not wait for the run's record to be built.
   */
  start(trigger: Trigger, event: unknown, requestId?: string, hops?: number, customResponse = false, eventJson?: string, bodyFromRaw = false): {
    outcome: Promise<RunOutcome | undefined>; durable: Promise<void>; ran: Promise<SandboxResult | undefined>;
  } {
    // Runs of a component without `$.service.db` do not depend on each other's results, so the
    // invocation is sent to the sandbox now (the worker still runs one at a time per component);
    // dedupe, the append and the state change stay strictly ordered in the mailbox below.
    // A request answered once durable (not by this run) is not waiting for the run: its invocation
    // may wait for company on its way to the worker (EngineRuntime.invoke).
    const holdable = trigger === 'http' && requestId !== undefined && !customResponse;
    const early = this.dispatchEarly(event, requestId, eventJson, bodyFromRaw, holdable);
    let durable: Promise<void> = Promise.resolve();
    let resolveRan!: (result: SandboxResult | undefined) => void;
    let rejectRan!: (err: unknown) => void;
    const ran = new Promise<SandboxResult | undefined>((res, rej) => {
      resolveRan = res;
      rejectRan = rej;
    });
    const outcome = this.enqueue(async () => {
      // Loaded once per actor: a run of a loaded source does not make the promise `load` would.
      const state = this.state ?? (await this.load());
      if (runRefusal(state, requestId)) return undefined;
      // The invocation sent early stands when the config is still the one it was built from;
      // otherwise (an update in between) the run goes again with the current one.
      let comp: ActorComponent;
      let sent: Promise<SandboxResult>;
      if (early && early.config === state.config) ({ comp, result: sent } = early);
      else {
        const built = this.invocation(state.config!, 'run', event, state, eventJson, bodyFromRaw);
        comp = built.comp;
        sent = this.deps.invoke(built.inv, state.accountId, holdable);
      }
      const result = this.withinDbQuota(await sent, state);
      // Final: nothing else runs in this mailbox before it is recorded.
      resolveRan(result);
      const events = this.decide(state, {
        type: 'recordRun', trigger, requestId, result, dedupe: comp.definition.dedupe, ...runIdsFor(requestId), now: Date.now(), hops,
      });
      // A run that serves a durable request is acknowledged at its commit, without waiting for an
      // fsync: a power loss that takes the record leaves the request pending, and its re-run
      // derives the same ids (runIdsFor), so receivers see the same webhook-ids again.
      // The caller of a custom response is answered once its request is durable and the run is
      // over: the run's record waits for the request's fsync in progress, not the other way round.
      durable = this.stage(events, requestId, undefined, requestId === undefined ? 'log' : 'commit', customResponse && requestId !== undefined);
      const emitted: SourceEventEmitted[] = [];
      let logs: RunLog[] = [];
      for (const e of events) {
        if (e.type === EventTypes.sourceEventEmitted) emitted.push(e.data);
        else if (e.type === EventTypes.sourceRunCompleted) logs = e.data.logs;
      }
      return { result, emitted, logs };
    });
    // A refused run, or a job that failed before the result, settles `ran` as it settles `outcome`
    // (no-ops once the result has settled it).
    outcome.then(() => resolveRan(undefined), rejectRan);
    return { outcome, durable: outcome.then(() => durable), ran };
  }

  /**
   * The host's check of the per-source db cap before the append (the guest checks it at each
   * db.set, but its runtime can be tampered with): writes past the cap are dropped and the run
   * fails with the reason in its logs.
   */
  private withinDbQuota(result: SandboxResult, state: SourceState): SandboxResult {
    if (result.dbWrites.length === 0) return result;
    const quota = fitDbWrites(state.dbSizes, state.dbBytes, result.dbWrites, this.deps.maxDbBytesPerSource);
    if (quota.refused === undefined) return result;
    const error = { name: 'OutputLimitError', message: quota.refused, kind: 'invalid' as const };
    return {
      ...result, ok: false, error, dbWrites: quota.accepted,
      logs: [...result.logs, { level: 'error', message: `${error.name}: ${error.message}`, ts: Date.now() }],
    };
  }

  private dispatchEarly(event: unknown, requestId: string | undefined, eventJson: string | undefined, bodyFromRaw: boolean, holdable: boolean): { config: SourceConfig; comp: ActorComponent; result: Promise<SandboxResult> } | undefined {
    const st = this.state;
    if (!st || runRefusal(st, requestId) || !st.config) return undefined;
    const comp = this.deps.component(st.config.componentId);
    if (!comp || comp.definition.props.some((p) => p.type === '$.service.db')) return undefined;
    const { inv } = this.invocation(st.config, 'run', event, st, eventJson, bodyFromRaw);
    return { config: st.config, comp, result: this.deps.invoke(inv, st.accountId, holdable) };
  }

  private async hook(config: SourceConfig, hook: SourceHook, actor?: string) {
    const state = await this.load();
    const { inv, comp } = this.invocation(config, hook, undefined, state);
    if (!comp.definition.hooks.includes(hook)) return { ok: true as const };
    const result = this.withinDbQuota(await this.deps.invoke(inv, state.accountId), state);
    const events = this.decide(state, {
      type: 'recordHook', hook, result, dedupe: comp.definition.dedupe, runId: uuidv7(), now: Date.now(), newEmitId: uuidv7,
    });
    await this.commit(events, undefined, actor);
    if (result.ok) return { ok: true as const };
    const logs: RunLog[] = result.logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
    const error = { name: result.error!.name, message: result.error!.message };
    return { ok: false as const, failure: new HookFailedError(hook, error, logs) };
  }

  /**
   * Deploys: records the request, calls `beforeHooks` (the source exists, deploying: subscriptions
   * made there hear what the hooks emit), runs `deploy` then `activate` (when active), records the outcome.
   */
  deploy(accountId: string, config: SourceConfig, actor: string, beforeHooks?: () => Promise<void>): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      const events = this.decide(state, { type: 'deploy', accountId, config });
      if (events.length > 0) await this.commit(events, undefined, actor);
      if (beforeHooks) await beforeHooks();
      await this.finishTransition('deploying', actor);
    });
  }

  /**
   * Runs the hooks of the transition in progress (`plannedHooks`) when it is `expected`, and
   * records its end: the first failing hook ends it failed (and is thrown) unless the decision
   * says otherwise (a delete that ignores hook errors).
   */
  private async finishTransition(expected: SourceStatus, actor: string): Promise<void> {
    const state = await this.load();
    if (state.status !== expected || !inTransition(state)) return;
    for (const { config, hook } of plannedHooks(state)) {
      const r = await this.hook(config, hook, actor);
      if (!r.ok) {
        const events = this.decide(await this.load(), { type: 'finishTransition', failure: { hook, error: r.failure.error } });
        await this.commit(events, undefined, actor);
        if (events.some((e) => e.type === EventTypes.sourceDeleted)) return;
        throw r.failure;
      }
    }
    await this.commit(this.decide(await this.load(), { type: 'finishTransition' }), undefined, actor);
  }

  /** Updates in place (same id): `deactivate` with the old config, then `activate` with the new one. */
  update(config: SourceConfig, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      await this.commit(this.decide(state, { type: 'update', config }), undefined, actor);
      await this.finishTransition('updating', actor);
    });
  }

  /** Deletes: `deactivate` (when active), then the instance; `ignoreHookErrors` deletes even if it throws. */
  delete(ignoreHookErrors: boolean, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      await this.commit(this.decide(state, { type: 'delete', ignoreHookErrors }), undefined, actor);
      await this.finishTransition('deleting', actor);
    });
  }

  /** Records that emitted events between two summary ids (inclusive; none = all) were cleared. */
  clearEvents(startId: string | undefined, endId: string | undefined, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      await this.commit(this.decide(state, { type: 'clearEvents', startId, endId }), undefined, actor);
    });
  }

  /** Finishes a lifecycle transition interrupted by a crash (the saga's recovery). Hook failures are recorded, not thrown. */
  recover(): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      await this.finishTransition(state.status, 'system').catch((err) => {
        if (!(err instanceof HookFailedError)) throw err;
      });
    });
  }
}
