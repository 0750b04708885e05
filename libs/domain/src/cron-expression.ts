import { Cron } from 'croner';

// Where the work is split, and why (measured against cron-expression.spec.ts with croner 11.0.0
// and cron-parser 5.10.5):
// - the calendar search (the next wall time matching the fields) is croner's;
// - parsing stays here: the libraries' errors do not name the field and the value the way
//   timer validation reports them ("Invalid value for minute: 60", "Constraint error, got value
//   60 expected range 0-59"), croner refuses `5/20`, both accept `?` in the minute field, and
//   neither follows Vixie cron's rule that a day field written with `*` (such as `*/2`) makes
//   the day fields AND rather than OR;
// - the daylight-saving policy stays here: in a spring-forward gap croner fires a skipped 02:30 at
//   03:00 and cron-parser skips it the next time it is asked from inside the gap, and both fire
//   wall times of the repeated hour a second time after a fall-back (`*/30` at 01:00 EST after
//   01:00 EDT); the spec wants a skipped time once, shifted by the gap, and a repeated one once.

/** A field of a cron expression, named as in error messages. */
export type CronField = 'second' | 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';

/** A cron expression or time zone that cannot be used; `field` and `value` name the culprit. */
export class CronError extends Error {
  constructor(
    readonly field: CronField | 'expression' | 'timezone',
    readonly value: string,
    readonly detail: string,
  ) {
    super(field === 'expression' ? `invalid cron expression "${value}": ${detail}` : `invalid cron ${field} "${value}": ${detail}`);
    this.name = 'CronError';
  }
}

/**
 * A parsed cron expression: for each field the sorted allowed values (day-of-week 0-6, Sunday 0).
 * `dayOfMonthStar` / `dayOfWeekStar` record whether that field was written starting with `*` (or
 * `?`): only when neither was does a day match on day-of-month OR day-of-week (Vixie cron's rule,
 * which is what cronie and most crontabs follow); otherwise a day must match both.
 */
export interface CronSchedule {
  readonly expression: string;
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly daysOfMonth: readonly number[];
  readonly months: readonly number[];
  readonly daysOfWeek: readonly number[];
  readonly dayOfMonthStar: boolean;
  readonly dayOfWeekStar: boolean;
}

interface FieldSpec {
  field: CronField;
  min: number;
  max: number;
  names?: readonly string[];
  /** Offset of the first name: months are named from 1, weekdays from 0. */
  nameBase?: number;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const SECOND: FieldSpec = { field: 'second', min: 0, max: 59 };
const MINUTE: FieldSpec = { field: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { field: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldSpec = { field: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldSpec = { field: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1 };
// 7 is accepted as Sunday and folded onto 0 after parsing.
const DAY_OF_WEEK: FieldSpec = { field: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, nameBase: 0 };

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Longest month length for each month (February counts its leap day). */
const MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Parses a cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6 with a
 * leading seconds field, or one of the macros @yearly @annually @monthly @weekly @daily @midnight
 * @hourly. Fields take `*`, lists `a,b`, ranges `a-b`, a step `/n` after `*` or a range (and
 * after a single value: `a/n` runs from a to the field's maximum), month names JAN-DEC and
 * weekday names SUN-SAT (any case); 0 and 7 are both Sunday; `?` is accepted as `*` in the day
 * fields. Throws a CronError naming the bad field and value; an expression that can never fire
 * (such as `0 0 30 2 *`) is rejected too.
 */
export function parseCron(expr: string): CronSchedule {
  if (typeof expr !== 'string') throw new CronError('expression', String(expr), 'must be a string');
  const text = expr.trim();
  if (text === '') throw new CronError('expression', expr, 'is empty');
  let body = text;
  if (text.startsWith('@')) {
    const macro = MACROS[text.toLowerCase()];
    if (!macro) {
      const detail = text.toLowerCase() === '@reboot'
        ? '@reboot is not supported by timers'
        : `unknown macro; expected one of ${Object.keys(MACROS).join(' ')}`;
      throw new CronError('expression', text, detail);
    }
    body = macro;
  }
  const parts = body.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    throw new CronError('expression', text,
      `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds, got ${parts.length}`);
  }
  const [sec, min, hour, dom, month, dow] = parts.length === 6 ? parts : ['0', ...parts];
  const schedule: CronSchedule = {
    expression: text,
    seconds: parseField(sec, SECOND),
    minutes: parseField(min, MINUTE),
    hours: parseField(hour, HOUR),
    daysOfMonth: parseField(dom, DAY_OF_MONTH),
    months: parseField(month, MONTH),
    daysOfWeek: parseField(dow, DAY_OF_WEEK),
    dayOfMonthStar: isStar(dom),
    dayOfWeekStar: isStar(dow),
  };
  // With OR semantics any weekday makes the schedule fire; with AND semantics every valid
  // (month, day) pair falls on each weekday within a 28-year cycle, so a schedule fires iff
  // some chosen day exists in some chosen month.
  if (schedule.dayOfMonthStar || schedule.dayOfWeekStar) {
    const possible = schedule.months.some((m) => schedule.daysOfMonth.some((d) => d <= MAX_DAYS[m - 1]));
    if (!possible) {
      throw new CronError('day-of-month', dom, `never occurs in the chosen month(s) (${month}), so the timer would never fire`);
    }
  }
  return Object.freeze(schedule);
}

function isStar(text: string): boolean {
  return text.startsWith('*') || text.startsWith('?');
}

function parseField(text: string, spec: FieldSpec): number[] {
  const seen = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') throw new CronError(spec.field, text, 'has an empty list item');
    const slash = item.split('/');
    if (slash.length > 2) throw new CronError(spec.field, item, 'has more than one step "/"');
    const [range, stepText] = slash;
    // Day-of-week `*` spans 0-6 so that Sunday is not listed twice (as 0 and 7).
    const top = spec.field === 'day-of-week' ? 6 : spec.max;
    let lo: number;
    let hi: number;
    if (range === '*' || (range === '?' && (spec.field === 'day-of-month' || spec.field === 'day-of-week'))) {
      lo = spec.min;
      hi = top;
    } else if (range.includes('-')) {
      const ends = range.split('-');
      if (ends.length !== 2 || ends[0] === '' || ends[1] === '') throw new CronError(spec.field, item, 'is not a valid range (expected a-b)');
      lo = parseValue(ends[0], spec);
      hi = parseValue(ends[1], spec);
      if (lo > hi) throw new CronError(spec.field, item, `range start ${ends[0]} is after its end ${ends[1]}`);
    } else {
      lo = parseValue(range, spec);
      hi = stepText === undefined ? lo : Math.max(lo, top);
    }
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText)) throw new CronError(spec.field, item, `step "${stepText}" is not a positive integer`);
      step = Number(stepText);
      const span = top - spec.min + 1;
      if (step < 1 || step > span) throw new CronError(spec.field, item, `step ${step} must be between 1 and ${span}`);
    }
    for (let v = lo; v <= hi; v += step) seen.add(spec.field === 'day-of-week' && v === 7 ? 0 : v);
  }
  return [...seen].sort((a, b) => a - b);
}

function parseValue(text: string, spec: FieldSpec): number {
  let v: number;
  if (/^\d+$/.test(text)) {
    v = Number(text);
  } else {
    const i = spec.names ? spec.names.indexOf(text.toUpperCase()) : -1;
    if (i < 0) {
      const hint = spec.names ? ` or a name ${spec.names[0]}-${spec.names[spec.names.length - 1]}` : '';
      throw new CronError(spec.field, text, `is not a number${hint}`);
    }
    v = i + (spec.nameBase ?? 0);
  }
  if (v < spec.min || v > spec.max) throw new CronError(spec.field, text, `is out of range ${spec.min}-${spec.max}`);
  return v;
}

/** Whether `tz` is an IANA time zone name this runtime knows (case-insensitive, as Intl accepts). */
export function isValidTimeZone(tz: unknown): tz is string {
  return canonicalTimeZone(tz) !== undefined;
}

/** The canonical spelling of a valid time zone (`europe/paris` -> `Europe/Paris`), or undefined. */
export function canonicalTimeZone(tz: unknown): string | undefined {
  if (typeof tz !== 'string' || tz.trim() === '') return undefined;
  try {
    return formatterFor(tz).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

const HOUR_MS = 3_600_000;
/**
 * How far back an offset change can still affect what is due next: more than any shift in the
 * time zone database (Samoa skipped a whole day in 2011).
 */
const RECENT_CHANGE_WINDOW = 26 * HOUR_MS;
/** Half-width of the window probed around a wall time; wider than any UTC offset (+14 h). */
const PROBE = 30 * HOUR_MS;

/**
 * The first instant (epoch ms, a whole second) strictly after `afterMs` at which `schedule` fires,
 * with its fields read as wall-clock time in the IANA `timezone` (default UTC).
 *
 * Daylight-saving rules, so that every matching wall time fires exactly once:
 * - a wall time skipped by a spring-forward gap fires at the instant it would have had without
 *   the jump, i.e. shifted later by the gap (02:30 on the spring-forward night in New York fires at
 *   03:30 EDT); when it coincides with a regular match (as an hourly schedule's 02:00 does with
 *   03:00) it fires once;
 * - a wall time repeated by a fall-back fires only on its first occurrence, so schedules finer
 *   than an hour pause during the repeated hour.
 * Throws CronError (field `timezone`) for an unknown time zone.
 */
export function nextCronTime(schedule: CronSchedule, afterMs: number, timezone = 'UTC'): number {
  if (!Number.isFinite(afterMs)) throw new RangeError(`afterMs must be a finite number, got ${afterMs}`);
  if (timezone === 'UTC') return mustMatch(schedule, nextWallMatch(schedule, nextWholeSecond(afterMs)));
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = formatterFor(timezone);
  } catch {
    throw new CronError('timezone', timezone, 'is not a valid IANA time zone');
  }
  const offset = (t: number) => offsetAt(fmt, t);

  const o = offset(afterMs);
  let lowestWall = nextWholeSecond(afterMs + o);
  let best = Infinity;
  // Right after a DST change the wall clock alone does not tell what is still due: after a
  // spring-forward, skipped wall times fire late (up to the gap after the change); after a
  // fall-back, the repeated wall times already fired on their first pass.
  const oBefore = offset(afterMs - RECENT_CHANGE_WINDOW);
  const shift = Math.abs(o - oBefore);
  // Only the first `shift` after a change matters; one probe tells whether we are in it.
  if (oBefore !== o && offset(afterMs - shift) !== o) {
    const change = findChange(offset, afterMs - shift, afterMs);
    if (o > oBefore) {
      const skipped = nextWallMatch(schedule, nextWholeSecond(afterMs + oBefore));
      if (skipped !== undefined && skipped < change + o) best = skipped - oBefore;
    } else {
      lowestWall = Math.max(lowestWall, change + oBefore);
    }
  }
  const wall = nextWallMatch(schedule, lowestWall);
  if (wall === undefined) return mustMatch(schedule, Number.isFinite(best) ? best : undefined);
  const at = wallToInstant(offset, wall);
  let candidate = at.instant;
  if (at.gap) {
    // `wall` was skipped and fires late; a match just after the gap can come before it.
    const change = findChange(offset, wall - at.gap.after, wall - at.gap.before);
    const afterGap = nextWallMatch(schedule, change + at.gap.after);
    if (afterGap !== undefined) candidate = Math.min(candidate, afterGap - at.gap.after);
  }
  return Math.min(best, candidate);
}

function mustMatch(schedule: CronSchedule, t: number | undefined): number {
  // parseCron rejects schedules that never fire, so this only guards against a bug.
  if (t === undefined) throw new Error(`cron expression "${schedule.expression}" has no next match`);
  return t;
}

function nextWholeSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000 + 1000;
}

/**
 * Croner jobs by schedule, so that a schedule's pattern is compiled once (about 0.2 ms) rather
 * than on every lookup (a few microseconds).
 */
const wallClocks = new WeakMap<CronSchedule, Cron>();

/**
 * The schedule as a croner job over wall times encoded as UTC instants. It gets the expanded
 * field lists, not the text: croner refuses some forms we accept (`5/20`), and with no `*` left
 * in the text the day rule is decided by us alone (AND when either day field was written with
 * `*`, else OR, as Vixie cron does).
 */
function wallClockOf(s: CronSchedule): Cron {
  let job = wallClocks.get(s);
  if (!job) {
    const fields = [s.seconds, s.minutes, s.hours, s.daysOfMonth, s.months, s.daysOfWeek].map((f) => f.join(','));
    job = new Cron(fields.join(' '), { mode: '6-part', utcOffset: 0, domAndDow: s.dayOfMonthStar || s.dayOfWeekStar });
    wallClocks.set(s, job);
  }
  return job;
}

/**
 * The first wall time >= `from` (a whole second; wall times are encoded as if they were UTC) that
 * matches, found by croner's calendar search.
 */
function nextWallMatch(s: CronSchedule, from: number): number | undefined {
  // croner answers strictly after the instant it is given, rounded up to a whole second.
  return wallClockOf(s).nextRun(new Date(from - 1))?.getTime();
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23',
      year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** UTC offset (ms, whole seconds) of the zone at instant `t`: wall time minus instant. */
function offsetAt(fmt: Intl.DateTimeFormat, t: number): number {
  const whole = Math.floor(t / 1000) * 1000;
  const f: Record<string, number> = {};
  for (const p of fmt.formatToParts(whole)) if (p.type !== 'literal') f[p.type] = Number(p.value);
  return Date.UTC(f.year, f.month - 1, f.day, f.hour === 24 ? 0 : f.hour, f.minute, f.second) - whole;
}

/**
 * The first whole-second instant in (lo, hi] whose offset is the one at `hi`, for a single
 * offset change between the two (DST changes are months apart).
 */
function findChange(offset: (t: number) => number, lo: number, hi: number): number {
  const target = offset(hi);
  let a = Math.floor(lo / 1000);
  let b = Math.floor(hi / 1000);
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (offset(mid * 1000) === target) b = mid;
    else a = mid;
  }
  return b * 1000;
}

/**
 * The instant a wall time fires at: its only occurrence; the first of two in a fall-back; or,
 * for a wall time inside a spring-forward gap, the offset from before the gap (so it is shifted
 * later by the gap), reported with both offsets.
 */
function wallToInstant(offset: (t: number) => number, wall: number): { instant: number; gap?: { before: number; after: number } } {
  const before = offset(wall - PROBE);
  const after = offset(wall + PROBE);
  if (before === after) return { instant: wall - before };
  const early = wall - before;
  const late = wall - after;
  const earlyValid = offset(early) === before;
  const lateValid = offset(late) === after;
  if (earlyValid && lateValid) return { instant: Math.min(early, late) };
  if (earlyValid) return { instant: early };
  if (lateValid) return { instant: late };
  return { instant: early, gap: { before, after } };
}
