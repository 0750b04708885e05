import type { FieldError } from './component-definition';
import { canonicalTimeZone, CronError, nextCronTime, parseCron } from './cron-expression';
import type { PropDefinition } from './events';

/** A timer that fires every `intervalSeconds` seconds. */
export interface IntervalTimer {
  intervalSeconds: number;
  cron?: undefined;
  timezone?: undefined;
}

/** A timer that fires on a cron schedule read in `timezone` (UTC when absent). */
export interface CronTimer {
  cron: string;
  timezone?: string;
  intervalSeconds?: undefined;
}

/** A validated `$.interface.timer` value. */
export type TimerConfig = IntervalTimer | CronTimer;

/** The event a timer passes to `run` (spec 2.5): when it fired and its interval (null for cron). */
export interface TimerEvent {
  timestamp: number;
  interval_seconds: number | null;
  cron?: string;
}

/** A timer value that is not usable; `errors` name the fields. */
export class TimerConfigError extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.map((e) => `${e.field} ${e.message}`).join('; '));
    this.name = 'TimerConfigError';
  }
}

const SHAPE = 'must be {intervalSeconds: <integer>} or {cron: <cron expression>, timezone?: <IANA time zone>}';

/**
 * Validates a timer prop value (spec 2.5): `{intervalSeconds}` (or `interval_seconds`) with an
 * integer >= 1, or `{cron, timezone?}` with a parseable cron expression and a known IANA zone.
 * Returns the normalised timer (cron trimmed, zone in canonical spelling, other keys dropped) or
 * the errors, each naming `field` or one of its keys.
 */
export function validateTimer(
  value: unknown,
  field = 'timer',
): { timer: TimerConfig; errors: [] } | { timer?: undefined; errors: FieldError[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { errors: [{ field, message: SHAPE }] };
  const v = value as Record<string, unknown>;
  const intervalKey = v.intervalSeconds !== undefined ? 'intervalSeconds'
    : v.interval_seconds !== undefined ? 'interval_seconds' : undefined;
  const hasCron = v.cron !== undefined && v.cron !== null;
  if (intervalKey && hasCron) return { errors: [{ field, message: 'must have either intervalSeconds or cron, not both' }] };
  if (intervalKey) {
    const n = v[intervalKey];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
      const message = `must be an integer of at least 1 (seconds), got ${JSON.stringify(n)}`;
      return { errors: [{ field: `${field}.${intervalKey}`, message }] };
    }
    return { timer: { intervalSeconds: n }, errors: [] };
  }
  if (!hasCron) return { errors: [{ field, message: SHAPE }] };
  const errors: FieldError[] = [];
  let cron = '';
  if (typeof v.cron !== 'string') {
    errors.push({ field: `${field}.cron`, message: 'must be a string' });
  } else {
    cron = v.cron.trim();
    try {
      parseCron(cron);
    } catch (err) {
      if (!(err instanceof CronError)) throw err;
      errors.push({ field: `${field}.cron`, message: err.message });
    }
  }
  let timezone: string | undefined;
  if (v.timezone !== undefined && v.timezone !== null) {
    timezone = canonicalTimeZone(v.timezone);
    if (!timezone) {
      errors.push({ field: `${field}.timezone`, message: `must be an IANA time zone such as "Europe/Paris", got ${JSON.stringify(v.timezone)}` });
    }
  }
  if (errors.length) return { errors };
  return { timer: timezone ? { cron, timezone } : { cron }, errors: [] };
}

/** Like validateTimer, but returns the timer or throws a TimerConfigError. */
export function normalizeTimer(value: unknown, field = 'timer'): TimerConfig {
  const r = validateTimer(value, field);
  if (r.timer === undefined) throw new TimerConfigError(r.errors);
  return r.timer;
}

/**
 * The next time (epoch ms) a timer is due, strictly after `nowMs`; missed fires are not replayed
 * (see missedFireOnStart). An interval timer that never fired is first due one interval after
 * `nowMs`; one that fired keeps its phase (`lastFireMs + k * interval`). A cron timer is due at
 * its next match after both the last fire and now, so a slot never fires twice.
 */
export function nextTimerFire(timer: TimerConfig, lastFireMs: number | undefined, nowMs: number): number {
  if (timer.intervalSeconds !== undefined) {
    const every = timer.intervalSeconds * 1000;
    // A last fire in the future means the clock went back: restart the phase from now rather
    // than stay silent until the clock catches up.
    if (lastFireMs === undefined || lastFireMs > nowMs) return nowMs + every;
    return lastFireMs + (Math.floor((nowMs - lastFireMs) / every) + 1) * every;
  }
  const after = lastFireMs === undefined ? nowMs : Math.max(lastFireMs, nowMs);
  return nextCronTime(parseCron(timer.cron), after, timer.timezone ?? 'UTC');
}

/**
 * Whether at least one fire fell due between the last fire and now (the scheduler was down): the
 * scheduler then fires once at start, however many ticks were missed. A timer that never fired
 * has nothing to catch up on.
 */
export function missedFireOnStart(timer: TimerConfig, lastFireMs: number | undefined, nowMs: number): boolean {
  if (lastFireMs === undefined || lastFireMs > nowMs) return false;
  if (timer.intervalSeconds !== undefined) return lastFireMs + timer.intervalSeconds * 1000 <= nowMs;
  return nextCronTime(parseCron(timer.cron), lastFireMs, timer.timezone ?? 'UTC') <= nowMs;
}

/** The event passed to `run` for a fire at `firedAtMs`: epoch seconds, interval or null, and the cron expression. */
export function timerEvent(timer: TimerConfig, firedAtMs: number): TimerEvent {
  const event: TimerEvent = { timestamp: Math.floor(firedAtMs / 1000), interval_seconds: timer.intervalSeconds ?? null };
  if (timer.cron !== undefined) event.cron = timer.cron;
  return event;
}

/**
 * A source's timer prop and its raw value (configured, else the prop's default), or undefined
 * when the component has no `$.interface.timer` prop. A component with several uses the first.
 */
export function timerPropOf(
  props: readonly PropDefinition[],
  configuredProps: Record<string, unknown>,
): { propName: string; timer: unknown } | undefined {
  const prop = props.find((p) => p.type === '$.interface.timer');
  if (!prop) return undefined;
  return { propName: prop.name, timer: configuredProps[prop.name] ?? prop.default };
}
