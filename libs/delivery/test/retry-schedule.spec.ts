import {
  DEFAULT_RETRY_SCHEDULE,
  isDelivered,
  MAX_RETRY_AFTER_MS,
  nextAttemptDelayMs,
  parseRetrySchedule,
  retryAfterMs,
} from '../src/retry-schedule';

describe('parseRetrySchedule', () => {
  it('defaults to 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h when unset or blank', () => {
    expect(DEFAULT_RETRY_SCHEDULE).toEqual([0, 5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(parseRetrySchedule()).toEqual([...DEFAULT_RETRY_SCHEDULE]);
    expect(parseRetrySchedule('')).toEqual([...DEFAULT_RETRY_SCHEDULE]);
    expect(parseRetrySchedule('  ')).toEqual([...DEFAULT_RETRY_SCHEDULE]);
  });

  it('reads comma-separated seconds, spaces and decimals allowed', () => {
    expect(parseRetrySchedule('0, 1,2.5 ,60')).toEqual([0, 1, 2.5, 60]);
    expect(parseRetrySchedule('10')).toEqual([10]);
  });

  it('returns a copy that callers may change without touching the default', () => {
    const schedule = parseRetrySchedule();
    schedule[0] = 99;
    expect(DEFAULT_RETRY_SCHEDULE[0]).toBe(0);
  });

  it.each(['-5', '0,abc', '1,,2', '5s', '1e3', 'NaN', 'Infinity', '0x10'])('refuses %p naming the variable', (bad) => {
    expect(() => parseRetrySchedule(bad)).toThrow(/SLUICE_RETRY_SCHEDULE/);
  });
});

describe('nextAttemptDelayMs', () => {
  const schedule = [0, 5, 300];
  const noJitter = { jitter: 0 };

  it('walks the schedule and is exhausted after schedule.length attempts', () => {
    expect(nextAttemptDelayMs(schedule, 0, noJitter)).toBe(0);
    expect(nextAttemptDelayMs(schedule, 1, noJitter)).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 2, noJitter)).toBe(300_000);
    expect(nextAttemptDelayMs(schedule, 3, noJitter)).toBeNull();
    expect(nextAttemptDelayMs(schedule, 10, noJitter)).toBeNull();
    expect(nextAttemptDelayMs([], 0)).toBeNull();
  });

  it('keeps the default eight attempts', () => {
    const attempts = [...Array(20).keys()].map((n) => nextAttemptDelayMs(DEFAULT_RETRY_SCHEDULE, n, noJitter)).filter((d) => d !== null);
    expect(attempts).toHaveLength(8);
  });

  it('jitters by at most 10 % either way by default', () => {
    expect(nextAttemptDelayMs(schedule, 2, { random: () => 0 })).toBe(270_000);
    expect(nextAttemptDelayMs(schedule, 2, { random: () => 0.5 })).toBe(300_000);
    expect(nextAttemptDelayMs(schedule, 2, { random: () => 0.999999 })).toBeLessThanOrEqual(330_000);
    for (let i = 0; i < 1000; i++) {
      const delay = nextAttemptDelayMs(schedule, 1) as number;
      expect(delay).toBeGreaterThanOrEqual(4500);
      expect(delay).toBeLessThanOrEqual(5500);
    }
  });

  it('honours another jitter fraction, never going below zero', () => {
    expect(nextAttemptDelayMs(schedule, 1, { jitter: 0.5, random: () => 0 })).toBe(2500);
    expect(nextAttemptDelayMs(schedule, 1, { jitter: 1, random: () => 0 })).toBe(0);
    expect(nextAttemptDelayMs(schedule, 1, { jitter: 5, random: () => 0 })).toBe(0);
    expect(nextAttemptDelayMs(schedule, 0, { jitter: 0.5, random: () => 0 })).toBe(0);
  });

  it('lets a longer Retry-After in seconds replace the scheduled delay', () => {
    expect(nextAttemptDelayMs(schedule, 1, { ...noJitter, retryAfterHeader: '120' })).toBe(120_000);
    expect(nextAttemptDelayMs(schedule, 2, { ...noJitter, retryAfterHeader: '120' })).toBe(300_000);
  });

  it('reads a Retry-After HTTP date against the given clock', () => {
    const now = Date.parse('2024-05-01T12:00:00Z');
    const header = 'Wed, 01 May 2024 12:10:00 GMT';
    expect(nextAttemptDelayMs(schedule, 1, { ...noJitter, retryAfterHeader: header, now })).toBe(600_000);
  });

  it('caps Retry-After at 24 hours and ignores what it cannot read', () => {
    expect(nextAttemptDelayMs(schedule, 1, { ...noJitter, retryAfterHeader: '999999999' })).toBe(MAX_RETRY_AFTER_MS);
    expect(nextAttemptDelayMs(schedule, 1, { ...noJitter, retryAfterHeader: 'soon' })).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 1, { ...noJitter, retryAfterHeader: '-30' })).toBe(5000);
  });

  it('does not add attempts because of Retry-After', () => {
    expect(nextAttemptDelayMs(schedule, 3, { retryAfterHeader: '10' })).toBeNull();
  });

  it('rejects a negative or fractional attempt count', () => {
    expect(() => nextAttemptDelayMs(schedule, -1)).toThrow(RangeError);
    expect(() => nextAttemptDelayMs(schedule, 1.5)).toThrow(RangeError);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');

  it('reads delay-seconds and the three HTTP date forms', () => {
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs(' 30 ', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 01 May 2024 12:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Wednesday, 01-May-24 12:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Wed May  1 12:01:00 2024', now)).not.toBeNull();
  });

  it('gives 0 for a date in the past and null for nonsense', () => {
    expect(retryAfterMs('Wed, 01 May 2024 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('', now)).toBeNull();
    expect(retryAfterMs('1.5', now)).toBeNull();
    expect(retryAfterMs('later', now)).toBeNull();
  });
});

describe('isDelivered', () => {
  it('is true for 2xx only', () => {
    expect([200, 201, 204, 299].map(isDelivered)).toEqual([true, true, true, true]);
    expect([0, 199, 300, 302, 404, 429, 500, 503].map(isDelivered)).toEqual(Array(8).fill(false));
  });
});
