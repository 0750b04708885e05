import type { StoredEvent } from '@app/event-store';
import { dbEntryBytes } from './db-quota';
import { DedupeCache, emptyDedupeCache, rememberEmit } from './emit-dedupe';
import { asSourceStreamEvent, assertNever, EventTypes, SourceConfig, SourceStreamEvent } from './events';

/** Lifecycle status of a deployed source (spec section 3 plus the transient states of the saga). */
export type SourceStatus = 'none' | 'deploying' | 'deployed' | 'updating' | 'deleting' | 'deleted' | 'failed';

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
