import { canonicalTimeZone, CronError, CronSchedule, isValidTimeZone, nextCronTime, parseCron } from '../src/cron-expression';

const utc = (iso: string) => Date.parse(iso.endsWith('Z') ? iso : `${iso}Z`);
const iso = (ms: number) => new Date(ms).toISOString();
/** The next fire after `after` (ISO, UTC) as an ISO string. */
const next = (expr: string, after: string, tz?: string) => iso(nextCronTime(parseCron(expr), utc(after), tz));
/** Successive fires after `after`. */
const fires = (expr: string, after: string, n: number, tz?: string) => {
  const s = parseCron(expr);
  const out: string[] = [];
  let t = utc(after);
  for (let i = 0; i < n; i++) {
    t = nextCronTime(s, t, tz);
    out.push(iso(t));
  }
  return out;
};
const cronError = (fn: () => unknown): CronError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof CronError) return err;
    throw err;
  }
  throw new Error('expected a CronError');
};

describe('parseCron', () => {
  it('expands *, lists, ranges and steps', () => {
    const s = parseCron('*/15 1,3,5-7 10-20/5 * *');
    expect(s.seconds).toEqual([0]);
    expect(s.minutes).toEqual([0, 15, 30, 45]);
    expect(s.hours).toEqual([1, 3, 5, 6, 7]);
    expect(s.daysOfMonth).toEqual([10, 15, 20]);
    expect(s.months).toHaveLength(12);
    expect(s.daysOfWeek).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('reads a/n as a through the field maximum, stepping by n', () => {
    expect(parseCron('5/20 * * * *').minutes).toEqual([5, 25, 45]);
    expect(parseCron('0 0 * * 1/2').daysOfWeek).toEqual([1, 3, 5]);
  });

  it('accepts month and weekday names in any case, alone, in ranges and lists', () => {
    const s = parseCron('0 9 * jan-Mar,DEC mon-FRI');
    expect(s.months).toEqual([1, 2, 3, 12]);
    expect(s.daysOfWeek).toEqual([1, 2, 3, 4, 5]);
    expect(parseCron('0 0 * * sun,Sat').daysOfWeek).toEqual([0, 6]);
  });

  it('treats 0 and 7 as Sunday, also inside ranges', () => {
    expect(parseCron('0 0 * * 7').daysOfWeek).toEqual([0]);
    expect(parseCron('0 0 * * 0,7').daysOfWeek).toEqual([0]);
    expect(parseCron('0 0 * * 5-7').daysOfWeek).toEqual([0, 5, 6]);
    expect(parseCron('0 0 * * */2').daysOfWeek).toEqual([0, 2, 4, 6]);
  });

  it('expands the macros', () => {
    const fields = (e: string) => {
      const s = parseCron(e);
      return [s.minutes, s.hours, s.daysOfMonth, s.months, s.daysOfWeek].map((f) => f.join(','));
    };
    const all = (n: number, from = 0) => [...Array(n).keys()].map((i) => i + from).join(',');
    expect(fields('@yearly')).toEqual(['0', '0', '1', '1', all(7)]);
    expect(fields('@ANNUALLY')).toEqual(fields('@yearly'));
    expect(fields('@monthly')).toEqual(['0', '0', '1', all(12, 1), all(7)]);
    expect(fields('@weekly')).toEqual(['0', '0', all(31, 1), all(12, 1), '0']);
    expect(fields('@daily')).toEqual(['0', '0', all(31, 1), all(12, 1), all(7)]);
    expect(fields('@midnight')).toEqual(fields('@daily'));
    expect(fields('@hourly')).toEqual(['0', all(24), all(31, 1), all(12, 1), all(7)]);
  });

  it('reads a 6-field expression as seconds first', () => {
    const s = parseCron('*/20 30 * * * *');
    expect(s.seconds).toEqual([0, 20, 40]);
    expect(s.minutes).toEqual([30]);
  });

  it('tolerates surrounding and repeated whitespace, and ? in the day fields', () => {
    expect(parseCron('  0   12 ? * MON ').dayOfMonthStar).toBe(true);
    expect(parseCron('0 12 1 * ?').dayOfWeekStar).toBe(true);
  });

  it.each([
    ['60 * * * *', 'minute', '60', /out of range 0-59/],
    ['* 24 * * *', 'hour', '24', /out of range 0-23/],
    ['* * 0 * *', 'day-of-month', '0', /out of range 1-31/],
    ['* * 32 * *', 'day-of-month', '32', /out of range 1-31/],
    ['* * * 13 *', 'month', '13', /out of range 1-12/],
    ['* * * * 8', 'day-of-week', '8', /out of range 0-7/],
    ['* * * FOO *', 'month', 'FOO', /not a number or a name JAN-DEC/],
    ['* * * * MONDAY', 'day-of-week', 'MONDAY', /not a number or a name SUN-SAT/],
    ['x * * * *', 'minute', 'x', /not a number/],
    ['*/0 * * * *', 'minute', '*/0', /step 0 must be between 1 and 60/],
    ['*/61 * * * *', 'minute', '*/61', /step 61/],
    ['*/x * * * *', 'minute', '*/x', /step "x" is not a positive integer/],
    ['1/2/3 * * * *', 'minute', '1/2/3', /more than one step/],
    ['* 5-1 * * *', 'hour', '5-1', /range start 5 is after its end 1/],
    ['* 1- * * *', 'hour', '1-', /not a valid range/],
    ['* -1 * * *', 'hour', '-1', /not a valid range/],
    ['1,,2 * * * *', 'minute', '1,,2', /empty list item/],
    ['? * * * *', 'minute', '?', /not a number/],
    ['61 * * * * *', 'second', '61', /out of range 0-59/],
    ['0 0 30 2 *', 'day-of-month', '30', /never occurs/],
    ['0 0 31 4,6,9,11 *', 'day-of-month', '31', /never occurs/],
  ])('rejects %j naming the %s field', (expr, field, value, message) => {
    const err = cronError(() => parseCron(expr));
    expect(err.field).toBe(field);
    expect(err.value).toBe(value);
    expect(err.message).toMatch(message);
    expect(err.message).toContain(field);
  });

  it.each([
    ['', /is empty/],
    ['   ', /is empty/],
    ['* * * *', /expected 5 fields .* got 4/],
    ['* * * * * * *', /got 7/],
    ['@reboot', /@reboot is not supported/],
    ['@every_minute', /unknown macro/],
  ])('rejects the expression %j', (expr, message) => {
    const err = cronError(() => parseCron(expr));
    expect(err.field).toBe('expression');
    expect(err.message).toMatch(message);
  });

  it('accepts Feb 29 (leap years) and the 31st when some chosen month has it', () => {
    expect(() => parseCron('0 0 29 2 *')).not.toThrow();
    expect(() => parseCron('0 0 31 2,3 *')).not.toThrow();
    // With a restricted weekday the OR rule makes it fire on Mondays, so it is valid.
    expect(() => parseCron('0 0 30 2 1')).not.toThrow();
  });
});

describe('nextCronTime in UTC', () => {
  it('is strictly after the given instant, on whole seconds', () => {
    expect(next('* * * * *', '2024-05-01T10:00:00')).toBe('2024-05-01T10:01:00.000Z');
    expect(next('* * * * *', '2024-05-01T10:00:59.999')).toBe('2024-05-01T10:01:00.000Z');
    expect(next('*/15 * * * *', '2024-05-01T10:07:00')).toBe('2024-05-01T10:15:00.000Z');
    expect(next('*/15 * * * *', '2024-05-01T10:15:00')).toBe('2024-05-01T10:30:00.000Z');
    expect(next('*/15 * * * *', '2024-05-01T10:14:59.5')).toBe('2024-05-01T10:15:00.000Z');
  });

  it('rolls over hours, days, months and years', () => {
    expect(next('30 9 * * *', '2024-05-01T10:00:00')).toBe('2024-05-02T09:30:00.000Z');
    expect(next('0 * * * *', '2024-05-31T23:30:00')).toBe('2024-06-01T00:00:00.000Z');
    expect(next('@yearly', '2024-12-31T23:59:59')).toBe('2025-01-01T00:00:00.000Z');
    expect(next('@yearly', '2025-01-01T00:00:00')).toBe('2026-01-01T00:00:00.000Z');
    expect(next('0 0 1 * *', '2024-12-15T00:00:00')).toBe('2025-01-01T00:00:00.000Z');
  });

  it('ranges, steps on ranges and lists', () => {
    expect(fires('0 8-18/4 * * *', '2024-05-01T00:00:00', 4)).toEqual([
      '2024-05-01T08:00:00.000Z', '2024-05-01T12:00:00.000Z', '2024-05-01T16:00:00.000Z', '2024-05-02T08:00:00.000Z',
    ]);
    expect(fires('5,35 1,13 * * *', '2024-05-01T00:00:00', 4)).toEqual([
      '2024-05-01T01:05:00.000Z', '2024-05-01T01:35:00.000Z', '2024-05-01T13:05:00.000Z', '2024-05-01T13:35:00.000Z',
    ]);
  });

  it('skips months without the 31st', () => {
    expect(fires('0 0 31 * *', '2024-01-31T00:00:00', 4)).toEqual([
      '2024-03-31T00:00:00.000Z', '2024-05-31T00:00:00.000Z', '2024-07-31T00:00:00.000Z', '2024-08-31T00:00:00.000Z',
    ]);
    expect(next('0 0 30 * *', '2025-01-30T12:00:00')).toBe('2025-03-30T00:00:00.000Z');
  });

  it('finds Feb 29 only in leap years, across the 2100 non-leap century', () => {
    expect(fires('0 0 29 2 *', '2024-03-01T00:00:00', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
    expect(next('0 0 29 2 *', '2096-03-01T00:00:00')).toBe('2104-02-29T00:00:00.000Z');
  });

  it('weekdays by number and name, Sunday as 0 or 7', () => {
    // 2024-05-03 is a Friday.
    expect(fires('0 9 * * MON-FRI', '2024-05-03T10:00:00', 2)).toEqual(['2024-05-06T09:00:00.000Z', '2024-05-07T09:00:00.000Z']);
    expect(next('0 0 * * 7', '2024-05-03T00:00:00')).toBe('2024-05-05T00:00:00.000Z');
    expect(next('0 0 * * 0', '2024-05-03T00:00:00')).toBe('2024-05-05T00:00:00.000Z');
    expect(next('@weekly', '2024-05-05T00:00:00')).toBe('2024-05-12T00:00:00.000Z');
  });

  it('day-of-month OR day-of-week when both are restricted', () => {
    // The 13th, or any Friday: from Wed 2024-09-11, Fri 13th, then Fri 20th ... and Sun 13 Oct.
    expect(fires('0 0 13 * 5', '2024-09-11T00:00:00', 6).map((d) => d.slice(0, 10))).toEqual([
      '2024-09-13', '2024-09-20', '2024-09-27', '2024-10-04', '2024-10-11', '2024-10-13',
    ]);
    expect(next('0 0 1 * MON', '2024-06-25T00:00:00')).toBe('2024-07-01T00:00:00.000Z');
  });

  it('day-of-month AND day-of-week when either is written with * (Vixie cron)', () => {
    // Odd days that are Mondays: 2024-07-01, then 2024-07-15.
    expect(fires('0 0 */2 * 1', '2024-06-25T00:00:00', 2)).toEqual(['2024-07-01T00:00:00.000Z', '2024-07-15T00:00:00.000Z']);
    // Only Tuesdays (day-of-month is *).
    expect(next('0 0 * * 2', '2024-07-01T00:00:00')).toBe('2024-07-02T00:00:00.000Z');
    // Feb 29 that is a Sunday (weekday written with *): 2032.
    expect(next('0 0 29 2 */7', '2024-01-01T00:00:00')).toBe('2032-02-29T00:00:00.000Z');
  });

  it('honours the seconds field', () => {
    expect(fires('*/20 * * * * *', '2024-05-01T10:00:05', 3)).toEqual([
      '2024-05-01T10:00:20.000Z', '2024-05-01T10:00:40.000Z', '2024-05-01T10:01:00.000Z',
    ]);
    expect(next('10 30 9 * * *', '2024-05-01T09:30:10')).toBe('2024-05-02T09:30:10.000Z');
  });

  it('matches a minute-by-minute scan for random expressions', () => {
    const rng = seeded(42);
    const pick = (vals: string[]) => vals[Math.floor(rng() * vals.length)];
    for (let i = 0; i < 150; i++) {
      const expr = [
        pick(['*', '0', '*/7', '5,35', '10-20/3', '59']),
        pick(['*', '0', '*/5', '9-17', '23']),
        pick(['*', '1', '15,31', '*/10', '28-31']),
        pick(['*', '2', 'FEB,APR', '*/3', '12']),
        pick(['*', '0', 'MON-FRI', '6,7', '*/3']),
      ].join(' ');
      const s = parseCron(expr);
      const after = utc('2023-01-01T00:00:00') + Math.floor(rng() * 730) * 86_400_000 + Math.floor(rng() * 86_400) * 1000;
      const got = nextCronTime(s, after);
      expect({ expr, after: iso(after), got: iso(got) }).toEqual({ expr, after: iso(after), got: iso(scan(s, after, got)) });
    }
  });
});

describe('nextCronTime in time zones', () => {
  it('reads fields as wall-clock time in the zone', () => {
    expect(next('0 9 * * *', '2024-01-15T00:00:00', 'America/New_York')).toBe('2024-01-15T14:00:00.000Z');
    expect(next('0 9 * * *', '2024-07-15T00:00:00', 'America/New_York')).toBe('2024-07-15T13:00:00.000Z');
    expect(next('0 0 * * *', '2024-07-15T00:00:00', 'Europe/Paris')).toBe('2024-07-15T22:00:00.000Z');
    expect(next('0 0 1 1 *', '2024-12-31T12:00:00', 'Europe/Paris')).toBe('2024-12-31T23:00:00.000Z');
    expect(next('0 9 * * *', '2024-07-15T00:00:00', 'UTC')).toBe('2024-07-15T09:00:00.000Z');
    expect(next('0 9 * * *', '2024-07-15T00:00:00', 'Etc/UTC')).toBe('2024-07-15T09:00:00.000Z');
  });

  it('Asia/Kolkata: half-hour offset, including the weekday and date boundary', () => {
    expect(next('0 9 * * *', '2024-05-01T00:00:00', 'Asia/Kolkata')).toBe('2024-05-01T03:30:00.000Z');
    // Midnight IST is 18:30 UTC the day before.
    expect(next('@daily', '2024-05-01T00:00:00', 'Asia/Kolkata')).toBe('2024-05-01T18:30:00.000Z');
    // Monday 00:15 IST is Sunday 18:45 UTC (2024-05-05 is a Sunday).
    expect(next('15 0 * * MON', '2024-05-03T00:00:00', 'Asia/Kolkata')).toBe('2024-05-05T18:45:00.000Z');
    expect(fires('*/45 * * * *', '2024-05-01T00:00:00', 3, 'Asia/Kolkata')).toEqual([
      '2024-05-01T00:15:00.000Z', '2024-05-01T00:30:00.000Z', '2024-05-01T01:15:00.000Z',
    ]);
  });

  describe('America/New_York (2024: spring forward Mar 10 02:00 EST, fall back Nov 3 02:00 EDT)', () => {
    const NY = 'America/New_York';

    it('a fixed daily time follows the offset change', () => {
      expect(fires('0 9 * * *', '2024-03-09T00:00:00', 2, NY)).toEqual(['2024-03-09T14:00:00.000Z', '2024-03-10T13:00:00.000Z']);
      expect(fires('0 9 * * *', '2024-11-02T00:00:00', 2, NY)).toEqual(['2024-11-02T13:00:00.000Z', '2024-11-03T14:00:00.000Z']);
    });

    it('a wall time in the spring-forward gap fires once, shifted by the gap (02:30 -> 03:30 EDT)', () => {
      expect(fires('30 2 * * *', '2024-03-09T12:00:00', 3, NY)).toEqual([
        '2024-03-10T07:30:00.000Z', // 03:30 EDT
        '2024-03-11T06:30:00.000Z', // 02:30 EDT
        '2024-03-12T06:30:00.000Z',
      ]);
    });

    it('an hourly schedule fires once at 03:00 EDT for both the skipped 02:00 and 03:00', () => {
      expect(fires('0 * * * *', '2024-03-10T05:30:00', 3, NY)).toEqual([
        '2024-03-10T06:00:00.000Z', // 01:00 EST
        '2024-03-10T07:00:00.000Z', // 03:00 EDT
        '2024-03-10T08:00:00.000Z', // 04:00 EDT
      ]);
    });

    it('a skipped wall time still fires when asked from inside the shifted window', () => {
      // 03:10 EDT: the skipped 02:45 fires at 03:45 EDT, not tomorrow.
      expect(next('45 2 * * *', '2024-03-10T07:10:00', NY)).toBe('2024-03-10T07:45:00.000Z');
      // 03:50 EDT: it already fired.
      expect(next('45 2 * * *', '2024-03-10T07:50:00', NY)).toBe('2024-03-11T06:45:00.000Z');
    });

    it('a repeated wall time fires once, on its first occurrence', () => {
      expect(fires('30 1 * * *', '2024-11-02T12:00:00', 2, NY)).toEqual([
        '2024-11-03T05:30:00.000Z', // 01:30 EDT
        '2024-11-04T06:30:00.000Z', // 01:30 EST the next day
      ]);
      // Asked during the second pass (01:10 EST): 01:30 already fired.
      expect(next('30 1 * * *', '2024-11-03T06:10:00', NY)).toBe('2024-11-04T06:30:00.000Z');
    });

    it('a sub-hourly schedule pauses during the repeated hour', () => {
      expect(fires('*/30 * * * *', '2024-11-03T05:15:00', 3, NY)).toEqual([
        '2024-11-03T05:30:00.000Z', // 01:30 EDT
        '2024-11-03T07:00:00.000Z', // 02:00 EST
        '2024-11-03T07:30:00.000Z',
      ]);
      expect(next('*/30 * * * *', '2024-11-03T06:10:00', NY)).toBe('2024-11-03T07:00:00.000Z');
    });
  });

  describe('Europe/Paris (2024: spring forward Mar 31 02:00 CET, fall back Oct 27 03:00 CEST)', () => {
    const PARIS = 'Europe/Paris';

    it('a fixed daily time follows the offset change', () => {
      expect(fires('0 12 * * *', '2024-03-30T00:00:00', 2, PARIS)).toEqual(['2024-03-30T11:00:00.000Z', '2024-03-31T10:00:00.000Z']);
      expect(fires('0 12 * * *', '2024-10-26T00:00:00', 2, PARIS)).toEqual(['2024-10-26T10:00:00.000Z', '2024-10-27T11:00:00.000Z']);
    });

    it('02:30 on the spring-forward night fires at 03:30 CEST', () => {
      expect(fires('30 2 * * *', '2024-03-30T12:00:00', 2, PARIS)).toEqual(['2024-03-31T01:30:00.000Z', '2024-04-01T00:30:00.000Z']);
    });

    it('02:30 on the fall-back night fires once, at 02:30 CEST', () => {
      expect(fires('30 2 * * *', '2024-10-26T12:00:00', 2, PARIS)).toEqual(['2024-10-27T00:30:00.000Z', '2024-10-28T01:30:00.000Z']);
      expect(next('30 2 * * *', '2024-10-27T01:10:00', PARIS)).toBe('2024-10-28T01:30:00.000Z');
    });

    it('every 20 minutes across both changes never fires twice at the same instant', () => {
      const spring = fires('*/20 * * * *', '2024-03-31T00:30:00', 5, PARIS);
      expect(spring).toEqual([
        '2024-03-31T00:40:00.000Z', // 01:40 CET
        '2024-03-31T01:00:00.000Z', // 03:00 CEST (02:00 skipped, merged)
        '2024-03-31T01:20:00.000Z',
        '2024-03-31T01:40:00.000Z',
        '2024-03-31T02:00:00.000Z',
      ]);
      const fall = fires('*/20 * * * *', '2024-10-27T00:30:00', 4, PARIS);
      expect(fall).toEqual([
        '2024-10-27T00:40:00.000Z', // 02:40 CEST
        '2024-10-27T02:00:00.000Z', // 03:00 CET: the repeated 02:00-02:59 fired on the first pass
        '2024-10-27T02:20:00.000Z',
        '2024-10-27T02:40:00.000Z',
      ]);
    });
  });

  it('Australia/Lord_Howe: a half-hour gap where a later wall time comes first', () => {
    // 2024-10-06 02:00 (+10:30) jumps to 02:30 (+11). 02:10 is skipped and fires at 02:40 (+11),
    // after 02:35 (+11).
    expect(fires('10,35 2 * * *', '2024-10-05T12:00:00', 3, 'Australia/Lord_Howe')).toEqual([
      '2024-10-05T15:35:00.000Z', // 02:35 +11
      '2024-10-05T15:40:00.000Z', // 02:10 shifted to 02:40 +11
      '2024-10-06T15:10:00.000Z', // 02:10 +11 the next day
    ]);
  });

  it('matches an instant-by-instant scan across DST changes in several zones', () => {
    const rng = seeded(7);
    const pick = (vals: string[]) => vals[Math.floor(rng() * vals.length)];
    const windows: [string, string][] = [
      ['America/New_York', '2024-03-09T12:00:00'], ['America/New_York', '2024-11-02T12:00:00'],
      ['Europe/Paris', '2024-03-30T12:00:00'], ['Europe/Paris', '2024-10-26T12:00:00'],
      ['Australia/Lord_Howe', '2024-10-05T00:00:00'], ['Australia/Lord_Howe', '2024-04-06T00:00:00'],
      ['Asia/Kolkata', '2024-05-01T00:00:00'],
    ];
    let compared = 0;
    for (const [tz, start] of windows) {
      const from = utc(start);
      const to = from + 2 * 86_400_000;
      const expected = referenceFires(tz, from - 86_400_000, to + 86_400_000);
      for (let i = 0; i < 12; i++) {
        const expr = [pick(['*/10', '0', '15,45', '5-25/10', '*/7', '10,35']), pick(['*', '1-3', '2', '*/2', '0,2,3']), '*', '*', '*'].join(' ');
        const s = parseCron(expr);
        const want = expected(s);
        // Every 11 minutes (and a random second) across the window, so every phase of each change is asked.
        for (let after = from + Math.floor(rng() * 60) * 1000; after < to; after += 11 * 60_000) {
          const ref = want.find((t) => t > after);
          if (ref === undefined) continue;
          const got = nextCronTime(s, after, tz);
          if (got !== ref) expect({ tz, expr, after: iso(after), got: iso(got) }).toEqual({ tz, expr, after: iso(after), got: iso(ref) });
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(20_000);
  });

  it('rejects an unknown time zone naming the timezone field', () => {
    const err = cronError(() => nextCronTime(parseCron('* * * * *'), 0, 'Mars/Olympus_Mons'));
    expect(err.field).toBe('timezone');
    expect(err.message).toMatch(/Mars\/Olympus_Mons.*not a valid IANA time zone/);
  });

  it('isValidTimeZone and canonicalTimeZone', () => {
    expect(isValidTimeZone('Europe/Paris')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Asia/Kolkata')).toBe(true);
    expect(isValidTimeZone('Europe/Pariss')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
    expect(isValidTimeZone(42)).toBe(false);
    expect(canonicalTimeZone('europe/paris')).toBe('Europe/Paris');
    expect(canonicalTimeZone('nope')).toBeUndefined();
  });

  it('chains 5000 successive fires in a zone with DST without drifting', () => {
    const s = parseCron('*/5 * * * *');
    let t = utc('2024-01-01T00:00:00');
    for (let i = 0; i < 5000; i++) t = nextCronTime(s, t, 'America/New_York');
    expect(iso(t)).toBe('2024-01-18T08:40:00.000Z');
  });
});

/** Deterministic pseudo-random numbers in [0, 1). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

function wallFields(ms: number) {
  const d = new Date(ms);
  return { month: d.getUTCMonth() + 1, day: d.getUTCDate(), weekday: d.getUTCDay(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds() };
}

function matches(s: CronSchedule, wall: number): boolean {
  const f = wallFields(wall);
  const dom = s.daysOfMonth.includes(f.day);
  const dow = s.daysOfWeek.includes(f.weekday);
  const day = s.dayOfMonthStar || s.dayOfWeekStar ? dom && dow : dom || dow;
  return day && s.months.includes(f.month) && s.hours.includes(f.hour) && s.minutes.includes(f.minute) && s.seconds.includes(f.second);
}

/** UTC brute force: the first whole minute after `after` that matches (5-field expressions), walking day by day. */
function scan(s: CronSchedule, after: number, limit: number): number {
  const first = Math.floor(after / 60_000) * 60_000 + 60_000;
  for (let day = Math.floor(first / 86_400_000) * 86_400_000; day <= limit; day += 86_400_000) {
    const f = wallFields(day);
    const dom = s.daysOfMonth.includes(f.day);
    const dow = s.daysOfWeek.includes(f.weekday);
    if (!s.months.includes(f.month) || !(s.dayOfMonthStar || s.dayOfWeekStar ? dom && dow : dom || dow)) continue;
    for (let t = Math.max(day, first); t < day + 86_400_000; t += 60_000) if (matches(s, t)) return t;
  }
  return Number.NaN;
}

/**
 * Reference fires in a zone by walking instants minute by minute: a wall time fires at its first
 * occurrence, and a wall time skipped by a jump fires at the instant it would have had without it.
 */
function referenceFires(tz: string, from: number, to: number): (s: CronSchedule) => number[] {
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  });
  const wallOf = (t: number) => {
    const p: Record<string, number> = {};
    for (const x of fmt.formatToParts(t)) if (x.type !== 'literal') p[x.type] = Number(x.value);
    return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  };
  const walls: number[] = [];
  for (let t = from; t <= to; t += 60_000) walls.push(wallOf(t));
  return (s) => {
    const out = new Set<number>();
    const seen = new Set<number>();
    for (let i = 0; i < walls.length; i++) {
      const t = from + i * 60_000;
      if (i > 0 && walls[i] - walls[i - 1] > 60_000) {
        const offsetBefore = walls[i - 1] - (t - 60_000);
        for (let w = walls[i - 1] + 60_000; w < walls[i]; w += 60_000) if (matches(s, w)) out.add(w - offsetBefore);
      }
      if (!seen.has(walls[i]) && matches(s, walls[i])) out.add(t);
      seen.add(walls[i]);
    }
    return [...out].sort((a, b) => a - b);
  };
}
