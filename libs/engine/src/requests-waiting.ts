import type { EndpointTarget } from './use-cases/endpoint-use-cases';
import type { WorkflowEndpointTarget } from './use-cases/workflow-use-cases';

/** The caps on requests taken by endpoints and not yet run (`SLUICE_MAX_QUEUED_*`, `SLUICE_SOURCE_MAX_*`). */
export interface RequestsWaitingLimits {
  /** Runs waiting in this process. */
  maxRuns: number;
  /** Runs waiting for one account's endpoints. */
  maxRunsPerAccount: number;
  /** Requests waiting for one source's endpoint (a workflow's lane has its own cap). */
  maxRunsPerSource: number;
  /** Request bodies' bytes held in this process by requests waiting to run. */
  maxBytes: number;
  /** The same, for one account's endpoints. */
  maxBytesPerAccount: number;
  /** The same, for one endpoint (a source's or a workflow's). */
  maxBytesPerEndpoint: number;
}

/**
 * Where a request would go: a source's endpoint (its requests count against `maxRunsPerSource`)
 * or a workflow's (its lane has its own cap on runs).
 */
export type WaitingTarget = EndpointTarget | WorkflowEndpointTarget;

/** What one endpoint holds: requests waiting to run and their bodies' bytes. */
export interface EndpointWaiting {
  runs: number;
  bytes: number;
  /** Its last request was refused by its own caps, and none of its requests has run since. */
  full: boolean;
}

/** Which cap a request was refused by, for the 429's message. */
export type WaitingRefusal = 'process' | 'account' | 'source_runs' | 'bytes' | 'account_bytes' | 'endpoint_bytes';

interface Tally {
  runs: number;
  bytes: number;
  /** An endpoint's: a request was refused by its own caps since one of its requests last ran. */
  refused: boolean;
}

/**
 * Requests taken by the source and workflow endpoints and not yet over, counted in all, per
 * account and per endpoint, in runs and in their bodies' bytes, against their caps. A request
 * waiting to run holds its event (its raw body, its text for the log and the sandbox)
 * in this process and its invocation in the sandbox worker's, several times its body's size: one
 * slow source taking large bodies filled the server's heap in seconds (2.4 GB after 1,300
 * requests of 256 KB, then a crash). The bytes caps bound that memory; the per-endpoint caps keep
 * one slow source from taking its account's room, as the account's keep one account from taking
 * the process's.
 */
export class RequestsWaiting {
  private readonly total: Pick<Tally, 'runs' | 'bytes'> = { runs: 0, bytes: 0 };
  private readonly accounts = new Map<string, Tally>();
  private readonly endpoints = new Map<string, Tally>();

  constructor(readonly limits: RequestsWaitingLimits) {}

  /** Why a request of `bytes` for `target` may not wait now, or undefined when there is room. */
  refusal(target: WaitingTarget, bytes: number): WaitingRefusal | undefined {
    const { limits, total } = this;
    // The common case first: with little waiting in all, no map is read.
    if (total.runs < limits.maxRuns && total.bytes + bytes <= limits.maxBytes && total.bytes + bytes <= limits.maxBytesPerEndpoint
      && total.runs < limits.maxRunsPerAccount && total.runs < limits.maxRunsPerSource && total.bytes + bytes <= limits.maxBytesPerAccount) return undefined;
    if (total.runs >= limits.maxRuns) return 'process';
    // A request alone is always let through by the bytes caps (its size is the endpoint's own
    // limit), so a cap smaller than one body does not shut an endpoint for good.
    if (total.bytes > 0 && total.bytes + bytes > limits.maxBytes) return 'bytes';
    const account = this.accounts.get(target.accountId);
    if (account) {
      if (account.runs >= limits.maxRunsPerAccount) return 'account';
      if (account.bytes + bytes > limits.maxBytesPerAccount) return 'account_bytes';
    }
    const isSource = !('workflowId' in target);
    const endpoint = this.endpoints.get(isSource ? target.sourceId : target.workflowId);
    if (endpoint) {
      const why = isSource && endpoint.runs >= limits.maxRunsPerSource ? 'source_runs'
        : endpoint.bytes + bytes > limits.maxBytesPerEndpoint ? 'endpoint_bytes' : undefined;
      if (why !== undefined) endpoint.refused = true;
      return why;
    }
    return undefined;
  }

  /**
   * Counts a request until `over` settles; `onError` gets its rejection. One reaction for both ends
   * (`then` with two callbacks): `catch` then `finally`, and the caller's own `catch` beside
   * them, made three promises per request and `finally` two more closures.
   */
  track(target: WaitingTarget, bytes: number, over: Promise<unknown>, onError: (error: unknown) => void = () => undefined): void {
    const { accountId } = target;
    const id = 'workflowId' in target ? target.workflowId : target.sourceId;
    this.total.runs++;
    this.total.bytes += bytes;
    add(this.accounts, accountId, bytes);
    add(this.endpoints, id, bytes);
    over.then(() => this.release(accountId, id, bytes), (error: unknown) => {
      this.release(accountId, id, bytes);
      onError(error);
    });
  }

  /** What one source's or workflow's endpoint holds now. */
  of(id: string): EndpointWaiting {
    const t = this.endpoints.get(id);
    return { runs: t?.runs ?? 0, bytes: t?.bytes ?? 0, full: t?.refused ?? false };
  }

  private release(accountId: string, id: string, bytes: number): void {
    this.total.runs--;
    this.total.bytes -= bytes;
    remove(this.accounts, accountId, bytes);
    remove(this.endpoints, id, bytes);
  }
}

function add(tallies: Map<string, Tally>, key: string, bytes: number): void {
  const t = tallies.get(key);
  if (t) {
    t.runs++;
    t.bytes += bytes;
  } else tallies.set(key, { runs: 1, bytes, refused: false });
}

function remove(tallies: Map<string, Tally>, key: string, bytes: number): void {
  const t = tallies.get(key);
  if (!t) return;
  if (--t.runs === 0) tallies.delete(key);
  else {
    t.bytes -= bytes;
    t.refused = false;
  }
}
