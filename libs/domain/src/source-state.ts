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
  handledRequests: Set<string>;
  emitSeq: number;
  revision: bigint;
}

/** The state of a source before its first event; `sourceId` names it for {@link decideSource}. */
export function initialSourceState(sourceId?: string): SourceState {
  return { sourceId, status: 'none', db: new Map(), dbSizes: new Map(), dbBytes: 0, dedupe: emptyDedupeCache(), handledRequests: new Set(), emitSeq: 0, revision: -1n };
}

const HANDLED_REQUESTS_KEPT = 10_000;

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
      if (requestId) {
        state.handledRequests.add(requestId);
        if (state.handledRequests.size > HANDLED_REQUESTS_KEPT) {
          state.handledRequests.delete(state.handledRequests.values().next().value as string);
        }
      }
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
