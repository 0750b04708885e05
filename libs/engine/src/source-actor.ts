import type { EventStore, NewEvent } from '@app/event-store';
import { uuidv7, WrongExpectedRevisionError } from '@app/event-store';
import {
  applyDedupe, ComponentDefinition, EventTypes, evolveSource, fitDbWrites, initialSourceState, RunLog, runtimeProps, SecretBox,
  SourceConfig, SourceEventEmitted, SourceState, Streams,
} from '@app/domain';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';

/** What an actor needs from the rest of the engine. */
export interface SourceActorDeps {
  store: EventStore;
  box: SecretBox;
  publicUrl(): string;
  component(id: string): { definition: ComponentDefinition; bundle: string; codeHash: string } | undefined;
  invoke(inv: SandboxInvocation): Promise<SandboxResult>;
  /** UTF-8 bytes a source's db may hold (SLUICE_MAX_DB_BYTES_PER_SOURCE). */
  maxDbBytesPerSource: number;
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

type Trigger = 'http' | 'timer' | 'manual' | 'event';

/**
 * One deployed source as an actor: its state is folded from `source-<dc>`, its commands are
 * handled one at a time from a mailbox, and each turn ends with one append of everything it
 * produced, with the expected stream revision. So dedupe and db state need no locks and a
 * second writer gets a conflict instead of corrupting state.
 */
export class SourceActor {
  private state?: SourceState;
  private mailbox: Promise<unknown> = Promise.resolve();

  constructor(readonly sourceId: string, private readonly deps: SourceActorDeps) {}

  /** Queues a turn; turns run strictly one after another. */
  private enqueue<T>(turn: () => Promise<T>): Promise<T> {
    const next = this.mailbox.then(turn, turn);
    this.mailbox = next.catch(() => undefined);
    return next;
  }

  private async load(): Promise<SourceState> {
    if (this.state) return this.state;
    const state = initialSourceState();
    for (const e of await this.deps.store.readStream(Streams.source(this.sourceId))) evolveSource(state, e.type, e.data, e.revision);
    this.state = state;
    return state;
  }

  /**
   * Starts the append of a turn's events with the expected revision and folds them at once, so
   * the next turn can start before this one is durable: consecutive turns then share one group
   * commit. Appends of one stream are applied in the order they were started, so the expected
   * revisions line up. If an append fails, the cached state is dropped and reloaded from the log
   * by the next turn (the runs it carried stay pending and are resumed on restart).
   */
  private stage(events: NewEvent[], causationId?: string, actor?: string): Promise<void> {
    const state = this.state!;
    const stamped = events.map((e) => ({ ...e, id: e.id ?? uuidv7(), metadata: { causationId, actor: actor ?? this.sourceId, ...e.metadata } }));
    const append = this.deps.store.append(Streams.source(this.sourceId), stamped, {
      expectedRevision: state.revision < 0n ? 'no_stream' : state.revision,
    });
    let rev = state.revision;
    for (const e of stamped) evolveSource(state, e.type, e.data, ++rev);
    return append.then(
      () => undefined,
      (err) => {
        if (this.state === state) this.state = undefined;
        throw err;
      },
    );
  }

  /** Appends a turn's events and waits until they are durable. */
  private async commit(events: NewEvent[], causationId?: string, actor?: string): Promise<void> {
    await this.load();
    await this.stage(events, causationId, actor);
  }

  private invocation(config: SourceConfig, entry: SandboxInvocation['entry'], event: unknown, state: SourceState) {
    const comp = this.deps.component(config.componentId);
    if (!comp) throw new Error(`component ${config.componentId} of ${this.sourceId} is missing`);
    const httpProps: Record<string, { endpoint: string; customResponse: boolean }> = {};
    const dbProps: string[] = [];
    const timerProps: Record<string, unknown> = {};
    for (const p of comp.definition.props) {
      if (p.type === '$.interface.http') {
        httpProps[p.name] = { endpoint: `${this.deps.publicUrl()}/e/${config.endpointKey}`, customResponse: Boolean(p.customResponse) };
      } else if (p.type === '$.service.db') dbProps.push(p.name);
      else if (p.type === '$.interface.timer') timerProps[p.name] = config.configuredProps[p.name] ?? p.default ?? null;
    }
    const inv: SandboxInvocation = {
      codeId: comp.codeHash,
      // The isolate (and its module state) belongs to this source alone, even if others deploy the same code.
      instanceId: `${this.sourceId}@${comp.codeHash}`,
      bundle: comp.bundle,
      entry,
      event,
      props: runtimeProps(config.configuredProps, this.deps.box),
      httpProps,
      dbProps,
      timerProps,
      db: Object.fromEntries(state.db),
      dbBytes: state.dbBytes,
    };
    return { inv, comp };
  }

  /**
   * Runs the source for one trigger and records the run, its emits (ordered and deduped), its db
   * writes and its logs in one append. A failing run is recorded and also emitted on `$errors`.
   */
  run(trigger: Trigger, event: unknown, requestId?: string): Promise<RunOutcome | undefined> {
    const { outcome, durable } = this.start(trigger, event, requestId);
    return outcome.then(async (o) => {
      await durable;
      return o;
    });
  }

  /**
   * Starts a run and returns its outcome as soon as the run is over and its append is queued
   * (`outcome`), and separately when that append is durable (`durable`). Custom HTTP responses
   * are sent on `outcome`: a crash before `durable` re-runs the request after restart.
   */
  start(trigger: Trigger, event: unknown, requestId?: string): { outcome: Promise<RunOutcome | undefined>; durable: Promise<void> } {
    // Runs of a component without `$.service.db` do not depend on each other's results, so the
    // invocation is sent to the sandbox now (the worker still runs one at a time per component);
    // dedupe, the append and the state change stay strictly ordered in the mailbox below.
    const early = this.dispatchEarly(event, requestId);
    let durable: Promise<void> = Promise.resolve();
    const outcome = this.enqueue(async () => {
      const state = await this.load();
      if (state.status !== 'deployed' || !state.config) return undefined;
      if (requestId && state.handledRequests.has(requestId)) return undefined;
      const { inv, comp } = this.invocation(state.config, 'run', event, state);
      const result = this.withinDbQuota(early && early.config === state.config ? await early.result : await this.deps.invoke(inv), state);
      const logs: RunLog[] = result.logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
      const dedupe = applyDedupe(result.emits, comp.definition.dedupe, state.dedupe);
      for (const r of dedupe.refused) logs.push({ level: 'error', message: r.reason, ts: Date.now() });
      const now = Date.now();
      const runId = uuidv7();
      const emitted: SourceEventEmitted[] = [];
      let seq = state.emitSeq;
      const emitEvent = (event: unknown, meta: SourceEventEmitted['meta']): SourceEventEmitted => ({
        sourceId: this.sourceId, accountId: state.accountId!, emitId: uuidv7(), runId, summaryId: `${now}-${seq++}`, event, meta,
      });
      for (const e of dedupe.accepted) emitted.push(emitEvent(e.event ?? null, e.meta));
      if (!result.ok && result.error) {
        emitted.push(emitEvent({ error: { name: result.error.name, message: result.error.message, kind: result.error.kind }, trigger },
          { name: '$errors', summary: `${result.error.name}: ${result.error.message}`.slice(0, 200) }));
      }
      const lastWrite = new Map<string, unknown>();
      for (const w of result.dbWrites) lastWrite.set(w.key, w.value);
      const events: NewEvent[] = [
        ...[...lastWrite].map(([key, value]) => ({ type: EventTypes.sourceDbSet, data: { sourceId: this.sourceId, key, value } })),
        ...emitted.map((d) => ({ id: d.emitId, type: EventTypes.sourceEventEmitted, data: d })),
        {
          id: runId,
          type: EventTypes.sourceRunCompleted,
          data: {
            sourceId: this.sourceId, runId, trigger, requestId, ok: result.ok,
            error: result.error ? { name: result.error.name, message: result.error.message, kind: result.error.kind } : undefined,
            logs, emitted: emitted.length, durationMs: result.durationMs,
          },
        },
      ];
      durable = this.stage(events, requestId);
      return { result, emitted, logs };
    });
    return { outcome, durable: outcome.then(() => durable) };
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

  private dispatchEarly(event: unknown, requestId?: string): { config: SourceConfig; result: Promise<SandboxResult> } | undefined {
    const st = this.state;
    if (!st || st.status !== 'deployed' || !st.config || (requestId && st.handledRequests.has(requestId))) return undefined;
    const comp = this.deps.component(st.config.componentId);
    if (!comp || comp.definition.props.some((p) => p.type === '$.service.db')) return undefined;
    const { inv } = this.invocation(st.config, 'run', event, st);
    return { config: st.config, result: this.deps.invoke(inv) };
  }

  private async hook(config: SourceConfig, hook: 'deploy' | 'activate' | 'deactivate', actor?: string) {
    const state = await this.load();
    const { inv, comp } = this.invocation(config, hook, undefined, state);
    if (!comp.definition.hooks.includes(hook)) return { ok: true as const };
    const result = this.withinDbQuota(await this.deps.invoke(inv), state);
    const logs: RunLog[] = result.logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
    const error = result.error ? { name: result.error.name, message: result.error.message } : undefined;
    const lastWrite = new Map<string, unknown>();
    for (const w of result.dbWrites) lastWrite.set(w.key, w.value);
    await this.commit([
      ...(result.ok ? [...lastWrite].map(([key, value]) => ({ type: EventTypes.sourceDbSet, data: { sourceId: this.sourceId, key, value } })) : []),
      { type: EventTypes.sourceHookRan, data: { sourceId: this.sourceId, hook, ok: result.ok, error, logs, durationMs: result.durationMs } },
    ], undefined, actor);
    return result.ok ? { ok: true as const } : { ok: false as const, failure: new HookFailedError(hook, error!, logs) };
  }

  /** Deploys: records the request, runs `deploy` then `activate` (when active), records the outcome. */
  deploy(accountId: string, config: SourceConfig, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      if (state.status === 'none') {
        await this.commit([{ type: EventTypes.sourceDeployRequested, data: { sourceId: this.sourceId, accountId, ...config } }], undefined, actor);
      }
      await this.finishDeploy(actor);
    });
  }

  private async finishDeploy(actor: string): Promise<void> {
    const state = await this.load();
    if (state.status !== 'deploying' || !state.config) return;
    const config = state.config;
    for (const hook of config.active ? (['deploy', 'activate'] as const) : (['deploy'] as const)) {
      const r = await this.hook(config, hook, actor);
      if (!r.ok) {
        await this.commit([{ type: EventTypes.sourceDeployFailed, data: { sourceId: this.sourceId, hook, error: r.failure.error } }], undefined, actor);
        throw r.failure;
      }
    }
    await this.commit([{ type: EventTypes.sourceDeployed, data: { sourceId: this.sourceId } }], undefined, actor);
  }

  /** Updates in place (same id): `deactivate` with the old config, then `activate` with the new one. */
  update(config: SourceConfig, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      if (state.status !== 'deployed') throw new Error(`source ${this.sourceId} is ${state.status}`);
      await this.commit([{ type: EventTypes.sourceUpdateRequested, data: { sourceId: this.sourceId, ...config } }], undefined, actor);
      await this.finishUpdate(actor);
    });
  }

  private async finishUpdate(actor: string): Promise<void> {
    const state = await this.load();
    if (state.status !== 'updating' || !state.config || !state.pendingConfig) return;
    const next = state.pendingConfig;
    const steps: [SourceConfig, 'deactivate' | 'activate'][] = [];
    if (state.config.active) steps.push([state.config, 'deactivate']);
    if (next.active) steps.push([next, 'activate']);
    for (const [config, hook] of steps) {
      const r = await this.hook(config, hook, actor);
      if (!r.ok) {
        await this.commit([{ type: EventTypes.sourceUpdateFailed, data: { sourceId: this.sourceId, hook, error: r.failure.error } }], undefined, actor);
        throw r.failure;
      }
    }
    await this.commit([{ type: EventTypes.sourceUpdated, data: { sourceId: this.sourceId, ...next } }], undefined, actor);
  }

  /** Deletes: `deactivate` (when active), then the instance; `ignoreHookErrors` deletes even if it throws. */
  delete(ignoreHookErrors: boolean, actor: string): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      if (state.status !== 'deployed') throw new Error(`source ${this.sourceId} is ${state.status}`);
      await this.commit([{ type: EventTypes.sourceDeleteRequested, data: { sourceId: this.sourceId, ignoreHookErrors } }], undefined, actor);
      await this.finishDelete(actor);
    });
  }

  private async finishDelete(actor: string): Promise<void> {
    const state = await this.load();
    if (state.status !== 'deleting' || !state.config) return;
    if (state.config.active) {
      const r = await this.hook(state.config, 'deactivate', actor);
      if (!r.ok && !state.ignoreHookErrors) {
        await this.commit([{ type: EventTypes.sourceDeleteFailed, data: { sourceId: this.sourceId, hook: 'deactivate', error: r.failure.error } }], undefined, actor);
        throw r.failure;
      }
    }
    await this.commit([{ type: EventTypes.sourceDeleted, data: { sourceId: this.sourceId, accountId: state.accountId } }], undefined, actor);
  }

  /** Records that emitted events between two summary ids (inclusive; none = all) were cleared. */
  clearEvents(startId: string | undefined, endId: string | undefined, actor: string): Promise<void> {
    return this.enqueue(() => this.commit([{ type: EventTypes.sourceEventsCleared, data: { sourceId: this.sourceId, startId, endId } }], undefined, actor));
  }

  /** Finishes a lifecycle transition interrupted by a crash (the saga's recovery). Hook failures are recorded, not thrown. */
  recover(): Promise<void> {
    return this.enqueue(async () => {
      const state = await this.load();
      const run = state.status === 'deploying' ? this.finishDeploy('system')
        : state.status === 'updating' ? this.finishUpdate('system')
        : state.status === 'deleting' ? this.finishDelete('system') : Promise.resolve();
      await run.catch((err) => {
        if (!(err instanceof HookFailedError)) throw err;
      });
    });
  }
}
