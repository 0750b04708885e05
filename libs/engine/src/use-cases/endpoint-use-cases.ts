import { uuidv7 } from '@app/event-store';
import { EventTypes, Streams } from '@app/domain';
import { type EngineRuntime, MAX_REMEMBERED_KEYS } from '../engine-runtime';
import { requestTexts, type HttpRequestEvent } from '../http-request-event';
import type { SandboxResult } from '@app/sandbox';
import type { RunOutcome } from '../source-actor';
import { type EndpointWaiting, RequestsWaiting } from '../requests-waiting';


/** A source that answers at an endpoint key. */
export interface EndpointTarget {
  sourceId: string;
  /** The owning account (limits are per account). */
  accountId: string;
  /** The component answers the caller itself (`respond()`), so the caller waits for the run. */
  customResponse: boolean;
}

/** A request taken by a source endpoint: its id, when it is durably recorded, and its run. */
export interface ReceivedRequest {
  requestId: string;
  /** Resolves once the request is durably in the log (the caller's 200 waits for it). */
  recorded: Promise<unknown>;
  /** The run's outcome, as soon as the run is over and its append queued. */
  outcome: Promise<RunOutcome | undefined>;
  /** The run's result as soon as it is final, before its record is built (undefined: not run). */
  ran: Promise<SandboxResult | undefined>;
  /** Resolves once the run's append is durable. */
  durable: Promise<void>;
}

/** Source HTTP endpoints (`/e/<key>`): the hot path, so it records and runs without waiting for the read models. */
export class EndpointUseCases {
  /** Requests the endpoints took that have not run yet, against their caps (the endpoints count them). */
  readonly waiting: RequestsWaiting;

  constructor(private readonly rt: EngineRuntime) {
    const c = rt.config;
    this.waiting = new RequestsWaiting({
      maxRuns: c.maxQueuedRuns, maxRunsPerAccount: c.maxQueuedRunsPerAccount, maxRunsPerSource: c.sourceMaxWaitingRuns,
      maxBytes: c.maxQueuedBytes, maxBytesPerAccount: c.maxQueuedBytesPerAccount, maxBytesPerEndpoint: c.maxQueuedBytesPerEndpoint,
    });
  }

  /** What a source's endpoint holds waiting to run (full: it refused a request since one last ran), against its caps. */
  backlog(sourceId: string): EndpointWaiting & { maxRuns: number; maxBytes: number } {
    const { maxRunsPerSource: maxRuns, maxBytesPerEndpoint: maxBytes } = this.waiting.limits;
    return { ...this.waiting.of(sourceId), maxRuns, maxBytes };
  }

  /** The deployed, active source at an endpoint key. */
  find(endpointKey: string): EndpointTarget | undefined {
    const known = this.rt.endpointTargets.get(endpointKey);
    if (known !== undefined) return known ?? undefined;
    const { target, settled } = this.lookUp(endpointKey);
    if (!settled) return target;
    // Bounded: keys that lead nowhere are remembered too (a flood of unknown keys), so the map is emptied when full.
    if (this.rt.endpointTargets.size >= MAX_REMEMBERED_KEYS) this.rt.endpointTargets.clear();
    this.rt.endpointTargets.set(endpointKey, target ?? null);
    return target;
  }

  /** The target from the read models; `settled` false when its component could not be read (not remembered then). */
  private lookUp(endpointKey: string): { target?: EndpointTarget; settled: boolean } {
    const row = this.rt.queries.sourceByEndpoint(endpointKey);
    if (!row || row.status !== 'deployed' || row.active !== 1) return { settled: true };
    const comp = this.rt.component(row.component_id);
    const customResponse = comp?.definition.props.some((p) => p.type === '$.interface.http' && p.customResponse) ?? false;
    return { target: { sourceId: row.id, accountId: row.account_id, customResponse }, settled: comp !== undefined };
  }

  /**
   * Records a request to a source and starts its run. The run starts first: its invocation is
   * queued for the sandbox before the request is queued for the log, so it leaves in this turn
   * ahead of the request's group commit (both are written at the turn's end, in the order they
   * were queued) and the worker runs while the server commits. The run's record is appended only
   * once its result is back, so the request still precedes it in the log. The run does not wait
   * for the request's fsync; the answer does. `jsonBody`: the event's `body` is the JSON parse of
   * its `bodyRaw` (see `requestTexts`).
   */
  receive(sourceId: string, event: HttpRequestEvent, opts: { customResponse?: boolean; jsonBody?: boolean } = {}): ReceivedRequest {
    const requestId = uuidv7();
    const { eventJson, bodyFromRaw, data, dataJson } = requestTexts(sourceId, requestId, event, opts.jsonBody === true);
    const { outcome, durable, ran } = this.rt.actor(sourceId).start('http', event, requestId, undefined, opts.customResponse, eventJson, bodyFromRaw);
    // The request may wait a moment for its run's record, so both share one commit and fsync.
    // Not when the caller waits for the run's own answer (customResponse): there the request's
    // fsync overlaps the run instead of following it.
    const recorded = this.rt.store.append(Streams.inbox(sourceId), [{
      id: requestId, type: EventTypes.httpRequestReceived, data, dataJson, metadata: { actor: 'http' },
    }], { lingerMs: opts.customResponse ? 0 : this.rt.config.requestLingerMs });
    return { requestId, recorded, outcome, durable, ran };
  }
}
