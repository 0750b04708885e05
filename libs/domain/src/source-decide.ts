import type { NewEvent } from '@app/event-store';
import { applyDedupe, PendingEmit } from './emit-dedupe';
import {
  assertNever, event, EventTypes, RunLog, SourceConfig, SourceEventEmitted, SourceRunCompleted, SourceStreamEvent,
} from './events';
import type { SourceState } from './source-state';

/** A lifecycle hook of a source. */
export type SourceHook = 'deploy' | 'activate' | 'deactivate';

/** What started a run. */
export type RunTrigger = SourceRunCompleted['trigger'];

/** What the sandbox answered for one execution (a run or a hook), as the source's decisions need it. */
export interface ExecutionResult {
  ok: boolean;
  error?: { name: string; message: string; kind?: string };
  logs: RunLog[];
  emits: PendingEmit[];
  /** db.set calls in order (last write wins). */
  dbWrites: { key: string; value: unknown }[];
  durationMs: number;
}

/** The commands a source decides on. Hooks and runs are executed outside; their results come back as commands. */
export type SourceCommand =
  | { type: 'deploy'; accountId: string; config: SourceConfig }
  | { type: 'update'; config: SourceConfig }
  | { type: 'delete'; ignoreHookErrors: boolean }
  | { type: 'clearEvents'; startId?: string; endId?: string }
  /** A hook of the transition in progress has run. */
  /**
   * A lifecycle hook ran. Its emits are recorded like a run's (ordered, deduped with the
   * component's strategy, delivered, listed): sources emit their history from `deploy`. Ids and
   * the clock are inputs, as for `recordRun`.
   */
  | {
      type: 'recordHook'; hook: SourceHook; result: ExecutionResult;
      dedupe: 'unique' | 'greatest' | 'last' | undefined; runId: string; now: number; newEmitId: () => string;
    }
  /** The transition in progress is over: every hook ran (no `failure`), or one failed. */
  | { type: 'finishTransition'; failure?: { hook: SourceHook; error: { name: string; message: string } } }
  /**
   * A run is over. Ids and the clock are inputs, so the decision stays pure: `newEmitId` is
   * called once per recorded emit, in order.
   */
  | {
      type: 'recordRun'; trigger: RunTrigger; requestId?: string; result: ExecutionResult;
      dedupe: 'unique' | 'greatest' | 'last' | undefined; runId: string; now: number; newEmitId: () => string;
      /** Listener hops that led to this run (a run of a listener hearing an emit); absent: 0. */
      hops?: number;
    };

/** Why a command was refused; `message` is what callers have always been told. */
export interface SourceRejection {
  code: 'not_deployed' | 'not_in_transition' | 'already_handled' | 'unknown_source';
  message: string;
}

/** An event the source's decide produces, for its own stream. */
export type NewSourceEvent = NewEvent<SourceStreamEvent>;

/** The outcome of {@link decideSource}: the events to append (maybe none), or a refusal. */
export type SourceDecision = { events: NewSourceEvent[] } | { rejected: SourceRejection };

/** A hook to run with a config, in order, for the transition in progress. */
export interface PlannedHook {
  config: SourceConfig;
  hook: SourceHook;
}

/**
 * Decides what a command on a source records, from the state folded by `evolveSource`. Pure:
 * no I/O, no clock, no random ids (they come in the command).
 */
export function decideSource(state: SourceState, command: SourceCommand): SourceDecision {
  const sourceId = state.sourceId;
  if (sourceId === undefined) return reject('unknown_source', 'the source state does not name its source');
  switch (command.type) {
    case 'deploy':
      // Deploying twice is a no-op: the transition in progress (if any) is finished by the caller.
      if (state.status !== 'none') return { events: [] };
      return accept(event(EventTypes.sourceDeployRequested, { sourceId, accountId: command.accountId, ...command.config }));
    case 'update':
      if (state.status !== 'deployed') return notDeployed(state);
      return accept(event(EventTypes.sourceUpdateRequested, { sourceId, ...command.config }));
    case 'delete':
      if (state.status !== 'deployed') return notDeployed(state);
      return accept(event(EventTypes.sourceDeleteRequested, { sourceId, ignoreHookErrors: command.ignoreHookErrors }));
    case 'clearEvents':
      return accept(event(EventTypes.sourceEventsCleared, { sourceId, startId: command.startId, endId: command.endId }));
    case 'recordHook':
      return decideHookRecord(state, sourceId, command);
    case 'finishTransition':
      return decideTransitionEnd(state, sourceId, command.failure);
    case 'recordRun':
      return decideRunRecord(state, sourceId, command);
    default:
      return assertNever(command, 'source command');
  }
}

/**
 * Why a run for this request cannot happen now (checked before the sandbox is asked, and again
 * by `recordRun`), or `undefined` when it can: the source must be deployed, and a request is
 * never run twice.
 */
export function runRefusal(state: SourceState, requestId?: string): SourceRejection | undefined {
  if (state.status !== 'deployed' || !state.config) return notDeployed(state).rejected;
  if (requestId && state.handledRequests.has(requestId)) return { code: 'already_handled', message: `request ${requestId} already ran` };
  return undefined;
}

/**
 * The hooks the transition in progress runs, in order: deploy runs `deploy` then `activate`
 * (when active); update runs `deactivate` with the old config then `activate` with the new one
 * (each when active); delete runs `deactivate` (when active). Empty when nothing is in progress.
 */
export function plannedHooks(state: SourceState): PlannedHook[] {
  const { config, pendingConfig } = state;
  if (!config) return [];
  switch (state.status) {
    case 'deploying':
      return config.active ? [{ config, hook: 'deploy' }, { config, hook: 'activate' }] : [{ config, hook: 'deploy' }];
    case 'updating': {
      if (!pendingConfig) return [];
      const steps: PlannedHook[] = [];
      if (config.active) steps.push({ config, hook: 'deactivate' });
      if (pendingConfig.active) steps.push({ config: pendingConfig, hook: 'activate' });
      return steps;
    }
    case 'deleting':
      return config.active ? [{ config, hook: 'deactivate' }] : [];
    default:
      return [];
  }
}

/** Whether a status is a transition that `finishTransition` can end. */
export function inTransition(state: SourceState): boolean {
  return (state.status === 'deploying' || state.status === 'updating' || state.status === 'deleting') && state.config !== undefined;
}

function decideHookRecord(state: SourceState, sourceId: string, c: Extract<SourceCommand, { type: 'recordHook' }>): SourceDecision {
  if (!inTransition(state)) return notInTransition(state);
  const { hook, result } = c;
  const error = result.error ? { name: result.error.name, message: result.error.message } : undefined;
  const logs = plainLogs(result.logs);
  // A failed hook's db writes and emits are dropped: the transition it belonged to did not happen.
  const emitted = result.ok ? recordEmits(state, sourceId, c, logs, {}) : [];
  return {
    events: [
      ...(result.ok ? dbSetEvents(sourceId, result.dbWrites) : []),
      ...emitted.map((d) => event(EventTypes.sourceEventEmitted, d, undefined, d.emitId)),
      event(EventTypes.sourceHookRan, {
        sourceId, hook, ok: result.ok, ...(error ? { error } : {}), logs, durationMs: result.durationMs,
        ...(emitted.length > 0 ? { runId: c.runId, emitted: emitted.length } : {}),
      }),
    ],
  };
}

/**
 * The emits of a run or a hook as recorded: ordered and deduped with the component's strategy
 * (each refusal logged in `logs`), with their ids, summary ids and hops.
 */
function recordEmits(
  state: SourceState, sourceId: string,
  c: { result: ExecutionResult; dedupe: 'unique' | 'greatest' | 'last' | undefined; runId: string; now: number; newEmitId: () => string },
  logs: RunLog[], hops: { hops?: number },
): SourceEventEmitted[] {
  const dedupe = applyDedupe(c.result.emits, c.dedupe, state.dedupe);
  for (const r of dedupe.refused) logs.push({ level: 'error', message: r.reason, ts: c.now });
  let seq = state.emitSeq;
  return dedupe.accepted.map((e) => ({
    sourceId, accountId: state.accountId!, emitId: c.newEmitId(), runId: c.runId, summaryId: `${c.now}-${seq++}`, event: e.event ?? null, meta: e.meta, ...hops,
    deliveryIds: 'ordered',
  }));
}

function decideTransitionEnd(
  state: SourceState, sourceId: string, failure: { hook: SourceHook; error: { name: string; message: string } } | undefined,
): SourceDecision {
  if (!inTransition(state)) return notInTransition(state);
  switch (state.status) {
    case 'deploying':
      return accept(failure
        ? event(EventTypes.sourceDeployFailed, { sourceId, hook: failure.hook, error: failure.error })
        : event(EventTypes.sourceDeployed, { sourceId }));
    case 'updating':
      if (failure) return accept(event(EventTypes.sourceUpdateFailed, { sourceId, hook: failure.hook, error: failure.error }));
      if (!state.pendingConfig) return notInTransition(state);
      return accept(event(EventTypes.sourceUpdated, { sourceId, ...state.pendingConfig }));
    case 'deleting':
      if (failure && !state.ignoreHookErrors) {
        return accept(event(EventTypes.sourceDeleteFailed, { sourceId, hook: failure.hook, error: failure.error }));
      }
      if (state.accountId === undefined) return reject('unknown_source', `source ${sourceId} has no account`);
      return accept(event(EventTypes.sourceDeleted, { sourceId, accountId: state.accountId }));
    default:
      return notInTransition(state);
  }
}

type RecordRun = Extract<SourceCommand, { type: 'recordRun' }>;

/**
 * A run's record: its db writes (the last per key), its emits ordered and deduped (refusals
 * logged), a `$errors` emit when it failed, and `source.run_completed.v1` naming its request,
 * all in one append.
 */
function decideRunRecord(state: SourceState, sourceId: string, c: RecordRun): SourceDecision {
  const refusal = runRefusal(state, c.requestId);
  if (refusal) return { rejected: refusal };
  const { result, runId, now } = c;
  const logs = plainLogs(result.logs);
  // Hops are recorded only when there are some, so runs outside listener chains record what they always did.
  const hops = c.hops ? { hops: c.hops } : {};
  const emitted = recordEmits(state, sourceId, c, logs, hops);
  const error = result.error
    ? { name: result.error.name, message: result.error.message, ...(result.error.kind !== undefined ? { kind: result.error.kind } : {}) }
    : undefined;
  if (!result.ok && error) {
    emitted.push({
      sourceId, accountId: state.accountId!, emitId: c.newEmitId(), runId, summaryId: `${now}-${state.emitSeq + emitted.length}`,
      event: { error, trigger: c.trigger }, meta: { name: '$errors', summary: `${error.name}: ${error.message}`.slice(0, 200) }, ...hops,
      deliveryIds: 'ordered',
    });
  }
  return {
    events: [
      ...dbSetEvents(sourceId, result.dbWrites),
      ...emitted.map((d) => event(EventTypes.sourceEventEmitted, d, undefined, d.emitId)),
      // Absent members are left out rather than set to undefined: the record then reads as its own
      // JSON, and the inline fold reads it as it is instead of parsing the text just written
      // (readsAsItsJson); the text is the same either way.
      event(EventTypes.sourceRunCompleted, {
        sourceId, runId, trigger: c.trigger, ...(c.requestId !== undefined ? { requestId: c.requestId } : {}), ok: result.ok,
        ...(error ? { error } : {}), logs, emitted: emitted.length, durationMs: result.durationMs, ...hops,
      }, undefined, runId),
    ],
  };
}

/** Log lines as recorded: only their level, message and time, whatever else the sandbox attached. */
function plainLogs(logs: RunLog[]): RunLog[] {
  return logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
}

/** One `source.db_set.v1` per key, with the last value written to it. */
function dbSetEvents(sourceId: string, writes: { key: string; value: unknown }[]): NewSourceEvent[] {
  const last = new Map<string, unknown>();
  for (const w of writes) last.set(w.key, w.value);
  return [...last].map(([key, value]) => event(EventTypes.sourceDbSet, { sourceId, key, value }));
}

function accept(e: NewSourceEvent): SourceDecision {
  return { events: [e] };
}

function reject(code: SourceRejection['code'], message: string): { rejected: SourceRejection } {
  return { rejected: { code, message } };
}

function notDeployed(state: SourceState): { rejected: SourceRejection } {
  return reject('not_deployed', `source ${state.sourceId} is ${state.status}`);
}

function notInTransition(state: SourceState): { rejected: SourceRejection } {
  return reject('not_in_transition', `source ${state.sourceId} is ${state.status}: no deploy, update or delete is in progress`);
}
