import type { StoredEvent } from '@app/event-store';
import { dbEntryBytes } from './db-quota';
import { DedupeCache, emptyDedupeCache, rememberEmit } from './emit-dedupe';
import { asSourceStreamEvent, assertNever, EventTypes, SourceConfig, SourceStreamEvent } from './events';

/** Every lifecycle status of a deployed source (spec section 3 plus the transient states of the saga). */
export const SOURCE_STATUSES = ['none', 'deploying', 'deployed', 'updating', 'deleting', 'deleted', 'failed'] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

/** State of one source, folded from its stream. */
export interface SourceState {
  sourceId?: string;
  accountId?: string;
  status: SourceStatus;
  config?: SourceConfig;
  /** Config requested by a pending update. */
  pendingConfig?: SourceConfig;
  ignoreHookErrors?: boolean;
  db: Map<string, unknown>;
  /** Bytes each db entry counts for ({@link dbEntryBytes}), and their sum: the per-source db cap needs them. */
  dbSizes: Map<string, number>;
  dbBytes: number;
  dedupe: DedupeCache;
  /** Request ids whose run is recorded (recent ones), so a request is never run twice. */
  handledRequests: RecentIds;
  emitSeq: number;
  revision: bigint;
}

const HANDLED_REQUESTS_KEPT = 10_000;

/**
 * The last `capacity` distinct ids added, for membership tests; adding one more forgets the
 * oldest. A ring of the ids beside the set: forgetting the oldest through the set's own order
 * (`set.values().next()`) walks past every slot deleted before it until the set is rehashed,
 * about 5 us per add at 10,000 ids where this takes 0.2 us (Node 20, these machines), paid by every
 * run a source records and by every run an actor folds when it loads a stream.
 */
export class RecentIds {
  private readonly ids = new Set<string>();
  private readonly ring: string[] = [];
  private next = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
  }

  get size(): number {
    return this.ids.size;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Adds `id` (nothing if it is there already), forgetting the oldest id beyond the capacity. */
  add(id: string): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    if (this.ring.length < this.capacity) {
      this.ring.push(id);
      return;
    }
    this.ids.delete(this.ring[this.next]);
    this.ring[this.next] = id;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The ids held, oldest first: adding them in this order to an empty set gives this one back. */
  toArray(): string[] {
    return this.ring.length < this.capacity ? [...this.ring] : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }
}

/** The state of a source before its first event; `sourceId` names it for {@link decideSource}. */
export function initialSourceState(sourceId?: string): SourceState {
  return {
    sourceId, status: 'none', db: new Map(), dbSizes: new Map(), dbBytes: 0, dedupe: emptyDedupeCache(),
    handledRequests: new RecentIds(HANDLED_REQUESTS_KEPT), emitSeq: 0, revision: -1n,
  };
}

/**
 * Folds one event of a `source-<dc>` stream into the state (mutates and returns it). Every
 * member of {@link SourceStreamEvent} has a case: a new one fails to compile until it has.
 */
export function evolveSource(state: SourceState, event: SourceStreamEvent, revision: bigint): SourceState {
  state.revision = revision;
  switch (event.type) {
    case EventTypes.sourceDeployRequested:
      state.sourceId = event.data.sourceId;
      state.accountId = event.data.accountId;
      state.status = 'deploying';
      state.config = pickConfig(event.data);
      break;
    case EventTypes.sourceDeployed:
      state.status = 'deployed';
      break;
    case EventTypes.sourceDeployFailed:
      state.status = 'failed';
      break;
    case EventTypes.sourceUpdateRequested:
      state.status = 'updating';
      state.pendingConfig = pickConfig(event.data);
      break;
    case EventTypes.sourceUpdated:
      state.status = 'deployed';
      state.config = pickConfig(event.data);
      state.pendingConfig = undefined;
      break;
    case EventTypes.sourceUpdateFailed:
      state.status = 'deployed';
      state.pendingConfig = undefined;
      break;
    case EventTypes.sourceDeleteRequested:
      state.status = 'deleting';
      state.ignoreHookErrors = Boolean(event.data.ignoreHookErrors);
      break;
    case EventTypes.sourceDeleteFailed:
      state.status = 'deployed';
      break;
    case EventTypes.sourceDeleted:
      state.status = 'deleted';
      break;
    case EventTypes.sourceDbSet: {
      const { key, value } = event.data;
      state.db.set(key, value);
      const size = dbEntryBytes(key, value);
      state.dbBytes += size - (state.dbSizes.get(key) ?? 0);
      state.dbSizes.set(key, size);
      break;
    }
    case EventTypes.sourceEventEmitted:
      state.emitSeq++;
      rememberEmit(state.dedupe, event.data.meta.id);
      break;
    case EventTypes.sourceRunCompleted: {
      const { requestId } = event.data;
      if (requestId) state.handledRequests.add(requestId);
      break;
    }
    case EventTypes.sourceHookRan:
    case EventTypes.sourceEventsCleared:
      // Recorded for the logs and the read models; nothing a later decision depends on.
      break;
    default:
      assertNever(event, 'source event');
  }
  return state;
}

/** Version of {@link SourceSnapshot}'s shape: a snapshot of another version is not used. */
export const SOURCE_SNAPSHOT_FORMAT = 1;

/**
 * A source's folded state as plain JSON, so that loading a long stream can start from it instead
 * of from the first event. Derived data, like a read model: whoever holds one checks it against
 * the log before use and folds from the first event when in doubt. The revision it covers is
 * kept beside it, not in it. `dbSizes` and `dbBytes` are not kept: they follow from `db`.
 */
export type SourceSnapshot = Pick<SourceState, 'sourceId' | 'accountId' | 'status' | 'config' | 'pendingConfig' | 'ignoreHookErrors' | 'dedupe' | 'emitSeq'> & {
  format: number;
  /** As the events carry them: a `value` that is undefined is left out, as JSON leaves it out of an event. */
  db: { key: string; value?: unknown }[];
  /** Oldest first. */
  handledRequests: string[];
};

/** The snapshot of `state` (copies: later folds into `state` do not change it). */
export function sourceSnapshot(state: SourceState): SourceSnapshot {
  return {
    format: SOURCE_SNAPSHOT_FORMAT,
    sourceId: state.sourceId,
    accountId: state.accountId,
    status: state.status,
    config: state.config,
    pendingConfig: state.pendingConfig,
    ignoreHookErrors: state.ignoreHookErrors,
    db: [...state.db].map(([key, value]) => ({ key, value })),
    dedupe: { unique: [...state.dedupe.unique], greatest: state.dedupe.greatest, last: state.dedupe.last },
    handledRequests: state.handledRequests.toArray(),
    emitSeq: state.emitSeq,
  };
}

/**
 * The state a snapshot describes, at `revision`; undefined when the snapshot is of another
 * format or not of the shape {@link sourceSnapshot} writes (then fold from the first event).
 */
export function sourceStateFromSnapshot(snapshot: unknown, revision: bigint): SourceState | undefined {
  if (!isSnapshot(snapshot)) return undefined;
  const state = initialSourceState(snapshot.sourceId);
  state.accountId = snapshot.accountId;
  state.status = snapshot.status;
  state.config = snapshot.config;
  state.pendingConfig = snapshot.pendingConfig;
  state.ignoreHookErrors = snapshot.ignoreHookErrors;
  for (const { key, value } of snapshot.db) {
    state.db.set(key, value);
    const size = dbEntryBytes(key, value);
    state.dbSizes.set(key, size);
    state.dbBytes += size;
  }
  state.dedupe = { unique: [...snapshot.dedupe.unique], greatest: snapshot.dedupe.greatest, last: snapshot.dedupe.last };
  for (const id of snapshot.handledRequests) state.handledRequests.add(id);
  state.emitSeq = snapshot.emitSeq;
  state.revision = revision;
  return state;
}

const STATUSES: ReadonlySet<string> = new Set<string>(SOURCE_STATUSES);

function isSnapshot(s: unknown): s is SourceSnapshot {
  if (typeof s !== 'object' || s === null) return false;
  const v = s as Partial<Record<keyof SourceSnapshot, unknown>>;
  const dedupe = v.dedupe as Partial<Record<keyof DedupeCache, unknown>> | null | undefined;
  return v.format === SOURCE_SNAPSHOT_FORMAT
    && typeof v.status === 'string' && STATUSES.has(v.status)
    && Array.isArray(v.db) && v.db.every((e) => typeof e === 'object' && e !== null && typeof (e as { key?: unknown }).key === 'string')
    && typeof dedupe === 'object' && dedupe !== null && Array.isArray(dedupe.unique) && dedupe.unique.every((id) => typeof id === 'string')
    && Array.isArray(v.handledRequests) && v.handledRequests.every((id) => typeof id === 'string')
    && typeof v.emitSeq === 'number' && Number.isInteger(v.emitSeq) && v.emitSeq >= 0
    && (v.config === undefined || (typeof v.config === 'object' && v.config !== null));
}

/**
 * Folds an event read from a `source-<dc>` stream. A type this build does not know still
 * advances the revision, so the next append's expected revision stays right.
 */
export function evolveSourceFromStored(state: SourceState, stored: StoredEvent): SourceState {
  const known = asSourceStreamEvent(stored);
  if (known) return evolveSource(state, known, stored.revision);
  state.revision = stored.revision;
  return state;
}

function pickConfig(d: SourceConfig): SourceConfig {
  return {
    componentId: d.componentId,
    name: d.name,
    nameSlug: d.nameSlug,
    configuredProps: d.configuredProps,
    active: d.active,
    endpointKey: d.endpointKey,
  };
}
