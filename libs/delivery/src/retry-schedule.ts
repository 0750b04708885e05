/** Default delays (seconds) before each delivery attempt: 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = Object.freeze([0, 5, 300, 1800, 7200, 18000, 36000, 36000]);

/** Default jitter: each scheduled delay moves by up to 10 % either way. */
export const DEFAULT_RETRY_JITTER = 0.1;

/** Longest wait a receiver's `Retry-After` can impose (24 h), so a bad header cannot park a delivery forever. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * Parses `SLUICE_RETRY_SCHEDULE`: comma-separated, non-negative delays in seconds (decimals
 * allowed), one per attempt. Unset or blank gives {@link DEFAULT_RETRY_SCHEDULE}. Throws an
 * error naming the variable and the bad item otherwise.
 */
export function parseRetrySchedule(env?: string): number[] {
  if (env === undefined || env.trim() === '') return [...DEFAULT_RETRY_SCHEDULE];
  return env.split(',').map((item) => {
    const text = item.trim();
    if (!/^\d+(\.\d+)?$/.test(text)) {
      throw new Error(
        `SLUICE_RETRY_SCHEDULE: "${text}" is not a non-negative number of seconds; expected comma-separated delays such as "0,5,300,1800"`,
      );
    }
    return Number(text);
  });
}

/** Options of {@link nextAttemptDelayMs}. */
export interface NextAttemptOptions {
  /** The `Retry-After` of the last response; pass it only for 429 and 503 answers. */
  retryAfterHeader?: string;
  /** Fraction of the delay by which it may move either way (0 to 1). Default 0.1. */
  jitter?: number;
  /** Source of randomness in [0, 1); default Math.random. */
  random?: () => number;
  /** Epoch ms used to read an HTTP-date `Retry-After`; default Date.now(). */
  now?: number;
}

/**
 * Milliseconds to wait before the next attempt, given how many attempts were already made, or
 * null when the schedule is exhausted: `schedule.length` attempts in all, the first after
 * `schedule[0]`. The scheduled delay gets +/- jitter (never below 0); a `Retry-After` replaces it
 * when longer, capped at {@link MAX_RETRY_AFTER_MS}, but never adds attempts.
 */
export function nextAttemptDelayMs(
  schedule: readonly number[],
  attemptsMade: number,
  opts: NextAttemptOptions = {},
): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 0) {
    throw new RangeError(`attemptsMade must be a non-negative integer, got ${attemptsMade}`);
  }
  if (attemptsMade >= schedule.length) return null;
  const base = schedule[attemptsMade] * 1000;
  const fraction = Math.min(1, Math.max(0, opts.jitter ?? DEFAULT_RETRY_JITTER));
  const random = opts.random ?? Math.random;
  const jittered = Math.max(0, Math.round(base * (1 + fraction * (2 * random() - 1))));
  const requested = opts.retryAfterHeader === undefined ? null : retryAfterMs(opts.retryAfterHeader, opts.now);
  return requested !== null && requested > jittered ? requested : jittered;
}

/**
 * The wait a `Retry-After` header asks for, in ms: delay-seconds or an HTTP date (a past date
 * gives 0), capped at {@link MAX_RETRY_AFTER_MS}; null when the header is not understood.
 */
export function retryAfterMs(header: string, now: number = Date.now()): number | null {
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // Every HTTP-date form names a day or month; requiring a letter keeps Date.parse from reading
  // stray numbers such as "1.5" as calendar dates.
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/** True for a status that counts as delivered: any 2xx. */
export function isDelivered(status: number): boolean {
  return status >= 200 && status <= 299;
}
