/** A timer armed by the invocation in progress. */
export interface GuestTimer {
  callback: (...args: unknown[]) => unknown;
  args: unknown[];
  repeat: boolean;
}

/** What the host sent back for one request (before the guest builds a Response from it). */
export interface HostResponse {
  status: number;
  statusText: string;
  headers: [string, string][];
  /** True when `body` is the decoded text of a valid UTF-8 body, false when it is latin1-encoded bytes. */
  utf8: boolean;
  body: string;
}

/** A request waiting for the host's answer. */
export interface PendingFetch {
  resolve(response: HostResponse): void;
  reject(error: unknown): void;
}

/** Receives one streamed response (Node's `http`/`https` in the guest). */
export interface StreamSink {
  /** The head arrived. */
  head(status: number, statusText: string, headers: [string, string][]): void;
  /** One body chunk; returns false while the reader's buffer is full (the host then waits for `resume`). */
  chunk(bytes: Uint8Array): boolean;
  /** The body ended (`error` null) or failed. */
  end(error: Error | null): void;
}

let lastRequestId = 0;

/** A fresh id for a request (fetch or streamed): the host answers by it. */
export function nextRequestId(): number {
  return ++lastRequestId;
}

/**
 * Per-invocation state of the runtime. Timers and requests belong to exactly one invocation: when
 * it ends they are dropped, so a late answer or a stale timer can never run code on behalf of a
 * later invocation (its promise simply never settles and is collected).
 */
export class InvocationScope {
  readonly timers = new Map<number, GuestTimer>();
  readonly fetches = new Map<number, PendingFetch>();
  readonly streams = new Map<number, StreamSink>();
  logCount = 0;
  /**
   * Set once the invocation armed a timer or started a request: it may wait for the host, or reach
   * outside. A batch of invocations ends after such a one (`invokeBatch`).
   */
  usedHost = false;
  /** Fails the run: set while an entry point runs, called for an exception thrown by a timer callback. */
  onUncaught: ((error: unknown) => void) | null = null;

  constructor(
    readonly seq: number,
    /** True while the bundle's top-level code runs: there is no run to bound timers or requests. */
    readonly loading: boolean,
  ) {}
}

/** The scope in progress, or null between invocations. */
export const current: { scope: InvocationScope | null } = { scope: null };
