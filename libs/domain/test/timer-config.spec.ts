import {
  missedFireOnStart, nextTimerFire, normalizeTimer, TimerConfigError, timerEvent, timerPropOf, validateTimer,
} from '../src/timer-config';

const utc = (iso: string) => Date.parse(`${iso}Z`);
const MIN = 60_000;

describe('validateTimer / normalizeTimer (spec 2.5 timer interface)', () => {
  it('accepts {intervalSeconds} and the snake_case interval_seconds', () => {
    expect(normalizeTimer({ intervalSeconds: 60 })).toEqual({ intervalSeconds: 60 });
    expect(normalizeTimer({ interval_seconds: 900 })).toEqual({ intervalSeconds: 900 });
    expect(normalizeTimer({ intervalSeconds: 1 })).toEqual({ intervalSeconds: 1 });
  });

  it('accepts {cron, timezone?}: expression trimmed, zone canonical, other keys dropped', () => {
    expect(normalizeTimer({ cron: ' */5 * * * * ' })).toEqual({ cron: '*/5 * * * *' });
    expect(normalizeTimer({ cron: '0 9 * * MON-FRI', timezone: 'europe/paris', label: 'x' })).toEqual({ cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris' });
    expect(normalizeTimer({ cron: '@daily', timezone: null })).toEqual({ cron: '@daily' });
  });

  it.each([
    [{ intervalSeconds: 0 }, 'timer.intervalSeconds', /integer of at least 1/],
    [{ intervalSeconds: -5 }, 'timer.intervalSeconds', /at least 1/],
    [{ intervalSeconds: 1.5 }, 'timer.intervalSeconds', /integer/],
    [{ intervalSeconds: '60' }, 'timer.intervalSeconds', /got "60"/],
    [{ intervalSeconds: Number.NaN }, 'timer.intervalSeconds', /integer/],
    [{ interval_seconds: 0 }, 'timer.interval_seconds', /at least 1/],
    [{ cron: 42 }, 'timer.cron', /must be a string/],
    [{ cron: '61 * * * *' }, 'timer.cron', /minute "61".*out of range 0-59/],
    [{ cron: '* * * *' }, 'timer.cron', /expected 5 fields/],
    [{ cron: '* * * * *', timezone: 'Europe/Pariss' }, 'timer.timezone', /IANA time zone/],
    [{ intervalSeconds: 60, cron: '* * * * *' }, 'timer', /either intervalSeconds or cron, not both/],
    [{}, 'timer', /must be \{intervalSeconds/],
    [{ intervalSecond: 60 }, 'timer', /must be \{intervalSeconds/],
    [null, 'timer', /must be/],
    ['*/5 * * * *', 'timer', /must be/],
    [[60], 'timer', /must be/],
  ])('rejects %j at %s', (value, field, message) => {
    const r = validateTimer(value);
    expect(r.timer).toBeUndefined();
    expect(r.errors[0].field).toBe(field);
    expect(r.errors[0].message).toMatch(message);
  });

  it('reports a bad cron and a bad zone together, under the given field', () => {
    const r = validateTimer({ cron: '* * * * 9', timezone: 'Nowhere' }, 'configured_props.timer');
    expect(r.errors.map((e) => e.field)).toEqual(['configured_props.timer.cron', 'configured_props.timer.timezone']);
    expect(r.errors[0].message).toMatch(/day-of-week "9"/);
  });

  it('normalizeTimer throws a TimerConfigError carrying the field errors', () => {
    let caught: unknown;
    try {
      normalizeTimer({ intervalSeconds: 0 }, 'configured_props.t');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(TimerConfigError);
    expect((caught as TimerConfigError).errors).toEqual([{ field: 'configured_props.t.intervalSeconds', message: expect.any(String) }]);
    expect((caught as Error).message).toMatch(/^configured_props\.t\.intervalSeconds must be/);
  });
});

describe('nextTimerFire', () => {
  const now = utc('2024-05-01T12:00:00');

  it('interval: first fire one interval after now when it never fired', () => {
    expect(nextTimerFire({ intervalSeconds: 60 }, undefined, now)).toBe(now + MIN);
  });

  it('interval: keeps the phase of the last fire', () => {
    expect(nextTimerFire({ intervalSeconds: 60 }, now - 20_000, now)).toBe(now + 40_000);
    // Exactly due now: the next one is a whole interval later (strictly after now).
    expect(nextTimerFire({ intervalSeconds: 60 }, now - MIN, now)).toBe(now + MIN);
  });

  it('interval: skips missed ticks instead of replaying them, staying in phase', () => {
    expect(nextTimerFire({ intervalSeconds: 60 }, now - 10 * MIN - 15_000, now)).toBe(now + 45_000);
  });

  it('interval: a last fire in the future (clock went back) restarts from now', () => {
    expect(nextTimerFire({ intervalSeconds: 60 }, now + 30 * MIN, now)).toBe(now + MIN);
  });

  it('cron: the next match after now, or after the last fire if that is later', () => {
    expect(nextTimerFire({ cron: '*/15 * * * *' }, undefined, utc('2024-05-01T12:07:00'))).toBe(utc('2024-05-01T12:15:00'));
    expect(nextTimerFire({ cron: '*/15 * * * *' }, utc('2024-05-01T11:00:00'), utc('2024-05-01T12:07:00'))).toBe(utc('2024-05-01T12:15:00'));
    // Fired at 12:15:00 and woken a little early: 12:15 does not fire twice.
    expect(nextTimerFire({ cron: '*/15 * * * *' }, utc('2024-05-01T12:15:00'), utc('2024-05-01T12:14:59.990'))).toBe(utc('2024-05-01T12:30:00'));
  });

  it('cron: in the configured time zone', () => {
    expect(nextTimerFire({ cron: '0 9 * * *', timezone: 'Asia/Kolkata' }, undefined, now)).toBe(utc('2024-05-02T03:30:00'));
    expect(nextTimerFire({ cron: '0 9 * * *', timezone: 'America/New_York' }, undefined, now)).toBe(utc('2024-05-01T13:00:00'));
  });
});

describe('missedFireOnStart', () => {
  const now = utc('2024-05-01T12:00:00');

  it('interval: true once at least one interval passed since the last fire', () => {
    expect(missedFireOnStart({ intervalSeconds: 60 }, now - 59_000, now)).toBe(false);
    expect(missedFireOnStart({ intervalSeconds: 60 }, now - MIN, now)).toBe(true);
    expect(missedFireOnStart({ intervalSeconds: 60 }, now - 60 * MIN, now)).toBe(true);
  });

  it('cron: true when a scheduled time passed since the last fire', () => {
    const hourly = { cron: '0 * * * *' };
    expect(missedFireOnStart(hourly, utc('2024-05-01T11:00:00.250'), utc('2024-05-01T11:59:59'))).toBe(false);
    expect(missedFireOnStart(hourly, utc('2024-05-01T11:00:00.250'), utc('2024-05-01T12:00:00'))).toBe(true);
    expect(missedFireOnStart(hourly, utc('2024-04-01T00:00:00'), now)).toBe(true);
    const paris = { cron: '0 9 * * *', timezone: 'Europe/Paris' };
    // 09:00 Paris is 07:00 UTC in May.
    expect(missedFireOnStart(paris, utc('2024-05-01T06:00:00'), utc('2024-05-01T06:59:00'))).toBe(false);
    expect(missedFireOnStart(paris, utc('2024-05-01T06:00:00'), utc('2024-05-01T07:00:00'))).toBe(true);
  });

  it('never fired, or a last fire in the future: nothing to catch up', () => {
    expect(missedFireOnStart({ intervalSeconds: 60 }, undefined, now)).toBe(false);
    expect(missedFireOnStart({ cron: '* * * * *' }, undefined, now)).toBe(false);
    expect(missedFireOnStart({ intervalSeconds: 60 }, now + MIN, now)).toBe(false);
  });
});

describe('timerEvent', () => {
  it('carries epoch seconds and the interval (spec 2.5)', () => {
    expect(timerEvent({ intervalSeconds: 900 }, utc('2024-05-01T12:00:00.750'))).toEqual({ timestamp: 1714564800, interval_seconds: 900 });
  });

  it('for cron: interval_seconds null plus the expression', () => {
    expect(timerEvent({ cron: '*/5 * * * *', timezone: 'Europe/Paris' }, utc('2024-05-01T12:00:00'))).toEqual({
      timestamp: 1714564800, interval_seconds: null, cron: '*/5 * * * *',
    });
  });
});

describe('timerPropOf', () => {
  const props = [
    { name: 'db', type: '$.service.db' },
    { name: 'timer', type: '$.interface.timer', default: { intervalSeconds: 60 } },
  ];

  it('returns the configured value, else the default', () => {
    expect(timerPropOf(props, { timer: { cron: '@hourly' } })).toEqual({ propName: 'timer', timer: { cron: '@hourly' } });
    expect(timerPropOf(props, {})).toEqual({ propName: 'timer', timer: { intervalSeconds: 60 } });
  });

  it('is undefined without a timer prop', () => {
    expect(timerPropOf([{ name: 'http', type: '$.interface.http' }], {})).toBeUndefined();
  });
});
