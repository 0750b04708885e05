import { dbEntryBytes } from './db-quota';
import { DedupeCache, emptyDedupeCache, rememberEmit } from './emit-dedupe';
import {
  EventTypes, SourceConfig, SourceDbSet, SourceDeployRequested, SourceEventEmitted, SourceUpdated,
} from './events';

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

export function initialSourceState(): SourceState {
  return { status: 'none', db: new Map(), dbSizes: new Map(), dbBytes: 0, dedupe: emptyDedupeCache(), handledRequests: new Set(), emitSeq: 0, revision: -1n };
}

const HANDLED_REQUESTS_KEPT = 10_000;

/** Folds one event of a `source-<dc>` stream into the state (mutates and returns it). */
export function evolveSource(state: SourceState, type: string, data: any, revision: bigint): SourceState {
  state.revision = revision;
  switch (type) {
    case EventTypes.sourceDeployRequested: {
      const d = data as SourceDeployRequested;
      state.sourceId = d.sourceId;
      state.accountId = d.accountId;
      state.status = 'deploying';
      state.config = pickConfig(d);
      break;
    }
    case EventTypes.sourceDeployed:
      state.status = 'deployed';
      break;
    case EventTypes.sourceDeployFailed:
      state.status = 'failed';
      break;
    case EventTypes.sourceUpdateRequested:
      state.status = 'updating';
      state.pendingConfig = pickConfig(data as SourceUpdated);
      break;
    case EventTypes.sourceUpdated:
      state.status = 'deployed';
      state.config = pickConfig(data as SourceUpdated);
      state.pendingConfig = undefined;
      break;
    case EventTypes.sourceUpdateFailed:
      state.status = 'deployed';
      state.pendingConfig = undefined;
      break;
    case EventTypes.sourceDeleteRequested:
      state.status = 'deleting';
      state.ignoreHookErrors = Boolean(data.ignoreHookErrors);
      break;
    case EventTypes.sourceDeleteFailed:
      state.status = 'deployed';
      break;
    case EventTypes.sourceDeleted:
      state.status = 'deleted';
      break;
    case EventTypes.sourceDbSet: {
      const d = data as SourceDbSet;
      state.db.set(d.key, d.value);
      const size = dbEntryBytes(d.key, d.value);
      state.dbBytes += size - (state.dbSizes.get(d.key) ?? 0);
      state.dbSizes.set(d.key, size);
      break;
    }
    case EventTypes.sourceEventEmitted: {
      const d = data as SourceEventEmitted;
      state.emitSeq++;
      rememberEmit(state.dedupe, d.meta.id);
      break;
    }
    case EventTypes.sourceRunCompleted:
      if (data.requestId) {
        state.handledRequests.add(data.requestId);
        if (state.handledRequests.size > HANDLED_REQUESTS_KEPT) {
          state.handledRequests.delete(state.handledRequests.values().next().value as string);
        }
      }
      break;
    default:
      break;
  }
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
