/**
 * The host functions the runtime receives at install. They reach the guest as plain functions
 * (isolated-vm `Callback`s) held only in the runtime's closure, never on the global object.
 * Everything crossing is a string or a number.
 */
export interface HostBindings {
  /** Fire and forget: one console line of invocation `seq`. */
  log(seq: number, level: string, message: string): void;
  /** Fire and forget: arm timer `id`; the host calls `fireTimer(seq, id)` when it is due. */
  timerStart(seq: number, id: number, ms: number, repeat: boolean): void;
  /** Fire and forget: disarm timer `id`. */
  timerClear(seq: number, id: number): void;
  /**
   * Fire and forget: perform a request; the host answers with `fetchDone(seq, id, ...)`. With
   * `stream: true` in the request JSON the body follows as `streamChunk`s and one `streamEnd`.
   */
  fetchStart(seq: number, id: number, requestJson: string, bodyLatin1: string): void;
  /** WHATWG URL parsing by the host: a JSON array of the URL's parts, or '' when invalid. */
  urlParse(input: string, base: string | undefined): string;
  /** Sets one part of a URL (`pathname`, `search`, ...): the parts of the resulting URL as JSON. */
  urlSet(href: string, part: string, value: string): string;
  /** Digest of latin1-encoded bytes, latin1-encoded; '' for an unknown algorithm. */
  digest(algorithm: string, dataLatin1: string): string;
  /** `count` cryptographically random bytes, latin1-encoded. */
  randomBytes(count: number): string;
  /**
   * Node-style hash (md5, sha1, sha224, sha256, sha384, sha512) of latin1-encoded bytes, or its
   * HMAC when `keyLatin1` is a string; latin1-encoded, '' for an unknown algorithm.
   */
  nodeHash(algorithm: string, dataLatin1: string, keyLatin1: string | null): string;
  /** Fire and forget: `resume` a streamed body whose buffer the guest drained, or `cancel` it. */
  streamControl(seq: number, id: number, action: 'resume' | 'cancel'): void;
}

/**
 * The fire-and-forget host functions again, as synchronous isolated-vm `Callback`s, and where a
 * synchronous entry's result goes. Used while the guest runs in a synchronous entry
 * (`GuestControl.invokeNow`): there the host's thread is the one running the guest, so a direct
 * call costs nothing, while a fire-and-forget call would reach the host only after the entry has
 * returned (after its result). The host holds these calls back until the entry has returned whole.
 */
export interface HostNowBindings {
  logNow: HostBindings['log'];
  timerStartNow: HostBindings['timerStart'];
  timerClearNow: HostBindings['timerClear'];
  fetchStartNow: HostBindings['fetchStart'];
  streamControlNow: HostBindings['streamControl'];
  /** The result JSON of the run a synchronous entry started, when it settled inside that entry. */
  settledNow(resultJson: string): void;
}
