import type { TimerEvent } from '@app/domain';
import { TimerScheduler, TimerSourceRow } from './timer-scheduler';

const T0 = Date.parse('2024-05-01T12:00:00Z');
const SEC = 1000;
const MIN = 60 * SEC;

interface FakeSource {
  row: TimerSourceRow;
  timer?: unknown;
  lastFire?: number;
}

/** An in-memory engine: sources, a fire log, and controllable run completion. */
function harness(sources: FakeSource[]) {
  const byId = new Map(sources.map((s) => [s.row.id, s]));
  const fired: { id: string; at: number; event: TimerEvent }[] = [];
  const logs: string[] = [];
  let hold: Promise<void> | undefined;
  let release: () => void = () => undefined;
  const scheduler = new TimerScheduler({
    liveSources: () => [...byId.values()].map((s) => s.row),
    timerOf: (id) => {
      const s = byId.get(id);
      return s && s.timer !== undefined ? { propName: 'timer', timer: s.timer } : undefined;
    },
    lastFire: (id) => byId.get(id)?.lastFire,
    fire: async (id, event) => {
      fired.push({ id, at: Date.now(), event });
      if (hold) await hold;
    },
    log: (msg) => logs.push(msg),
  });
  return {
    scheduler, fired, logs,
    firedAt: (id?: string) => fired.filter((f) => id === undefined || f.id === id).map((f) => new Date(f.at).toISOString()),
    set: (s: FakeSource) => byId.set(s.row.id, s),
    remove: (id: string) => byId.delete(id),
    /** Makes runs stay in flight until `finish()`. */
    holdRuns: () => {
      hold = new Promise((r) => {
        release = r;
      });
    },
    finish: () => {
      hold = undefined;
      release();
    },
  };
}

const live = (id: string): TimerSourceRow => ({ id, active: 1, status: 'deployed' });
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('TimerScheduler', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('fires an interval timer one interval after start, then every interval, with the spec event', async () => {
    const h = harness([{ row: live('dc_a'), timer: { intervalSeconds: 60 } }]);
    h.scheduler.start();
    await advance(59 * SEC);
    expect(h.fired).toHaveLength(0);
    await advance(SEC);
    await advance(2 * MIN);
    expect(h.firedAt()).toEqual(['2024-05-01T12:01:00.000Z', '2024-05-01T12:02:00.000Z', '2024-05-01T12:03:00.000Z']);
    expect(h.fired[0].event).toEqual({ timestamp: (T0 + MIN) / 1000, interval_seconds: 60 });
    await h.scheduler.stop();
  });

  it('keeps the phase of the last fire recorded in the log', async () => {
    const h = harness([{ row: live('dc_a'), timer: { interval_seconds: 300 }, lastFire: T0 - 2 * MIN }]);
    h.scheduler.start();
    expect(h.scheduler.nextFireAt('dc_a')).toBe(T0 + 3 * MIN);
    await advance(3 * MIN);
    expect(h.firedAt()).toEqual(['2024-05-01T12:03:00.000Z']);
    await h.scheduler.stop();
  });

  it('fires a cron timer at its matches, with interval_seconds null and the expression', async () => {
    jest.setSystemTime(T0 + 2 * MIN + 30 * SEC);
    const h = harness([{ row: live('dc_c'), timer: { cron: '*/5 * * * *' } }]);
    h.scheduler.start();
    await advance(15 * MIN);
    expect(h.firedAt()).toEqual(['2024-05-01T12:05:00.000Z', '2024-05-01T12:10:00.000Z', '2024-05-01T12:15:00.000Z']);
    expect(h.fired[0].event).toEqual({ timestamp: (T0 + 5 * MIN) / 1000, interval_seconds: null, cron: '*/5 * * * *' });
    await h.scheduler.stop();
  });

  it('reads cron fields in the configured time zone', async () => {
    const h = harness([{ row: live('dc_c'), timer: { cron: '30 14 * * *', timezone: 'Asia/Kolkata' } }]);
    h.scheduler.start();
    // 14:30 IST is 09:00 UTC: the next one is tomorrow.
    expect(new Date(h.scheduler.nextFireAt('dc_c')!).toISOString()).toBe('2024-05-02T09:00:00.000Z');
    await advance(21 * 60 * MIN);
    expect(h.firedAt()).toEqual(['2024-05-02T09:00:00.000Z']);
    await h.scheduler.stop();
  });

  it('fires only deployed, active sources with a valid timer', async () => {
    const h = harness([
      { row: live('dc_ok'), timer: { intervalSeconds: 60 } },
      { row: { id: 'dc_inactive', active: 0, status: 'deployed' }, timer: { intervalSeconds: 60 } },
      { row: { id: 'dc_updating', active: 1, status: 'updating' }, timer: { intervalSeconds: 60 } },
      { row: { id: 'dc_deploying', active: true, status: 'deploying' }, timer: { intervalSeconds: 60 } },
      { row: live('dc_no_timer') },
      { row: live('dc_bad'), timer: { intervalSeconds: 0 } },
      { row: live('dc_bad_cron'), timer: { cron: '* * * * 9' } },
    ]);
    h.scheduler.start();
    await advance(3 * MIN);
    expect(new Set(h.fired.map((f) => f.id))).toEqual(new Set(['dc_ok']));
    expect(h.logs.join('\n')).toMatch(/dc_bad not scheduled: configured_props\.timer\.intervalSeconds must be an integer/);
    expect(h.logs.join('\n')).toMatch(/dc_bad_cron not scheduled: .*day-of-week "9"/);
    await h.scheduler.stop();
  });

  it('uses one setTimeout for any number of sources', async () => {
    const sources = [...Array(50).keys()].map((i) => ({ row: live(`dc_${i}`), timer: { intervalSeconds: 10 + i } }));
    const h = harness(sources);
    h.scheduler.start();
    expect(jest.getTimerCount()).toBe(1);
    await advance(10 * SEC);
    expect(h.firedAt()).toEqual(['2024-05-01T12:00:10.000Z']);
    expect(jest.getTimerCount()).toBe(1);
    await advance(50 * SEC);
    // Each source fires floor(60 / interval) times in the first minute, each at a multiple of its interval.
    expect(h.fired).toHaveLength(sources.reduce((n, _, i) => n + Math.floor(60 / (10 + i)), 0));
    for (const f of h.fired) expect((f.at - T0) % (f.event.interval_seconds! * SEC)).toBe(0);
    expect(jest.getTimerCount()).toBe(1);
    await h.scheduler.stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('refresh after an update reschedules a changed timer from its last fire', async () => {
    const h = harness([{ row: live('dc_a'), timer: { intervalSeconds: 60 } }]);
    h.scheduler.start();
    await advance(MIN);
    expect(h.fired).toHaveLength(1);
    h.set({ row: live('dc_a'), timer: { intervalSeconds: 10 } });
    await advance(5 * SEC);
    h.scheduler.refresh('dc_a');
    // Last fire at 12:01:00, now 12:01:05: next at 12:01:10.
    await advance(25 * SEC);
    expect(h.firedAt()).toEqual(['2024-05-01T12:01:00.000Z', '2024-05-01T12:01:10.000Z', '2024-05-01T12:01:20.000Z', '2024-05-01T12:01:30.000Z']);
    await h.scheduler.stop();
  });

  it('refresh with an unchanged timer keeps the schedule', async () => {
    const h = harness([{ row: live('dc_a'), timer: { intervalSeconds: 60 } }]);
    h.scheduler.start();
    await advance(40 * SEC);
    h.set({ row: live('dc_a'), timer: { interval_seconds: 60 } });
    h.scheduler.refresh('dc_a');
    await advance(20 * SEC);
    expect(h.firedAt()).toEqual(['2024-05-01T12:01:00.000Z']);
    await h.scheduler.stop();
  });

  it('refresh after a delete or deactivation stops the timer; after a deploy starts one', async () => {
    const h = harness([
      { row: live('dc_a'), timer: { intervalSeconds: 60 } },
      { row: live('dc_b'), timer: { intervalSeconds: 60 } },
    ]);
    h.scheduler.start();
    await advance(MIN);
    expect(h.fired).toHaveLength(2);
    h.remove('dc_a');
    h.scheduler.refresh('dc_a');
    h.set({ row: { id: 'dc_b', active: 0, status: 'deployed' }, timer: { intervalSeconds: 60 } });
    h.scheduler.refresh('dc_b');
    expect(h.scheduler.nextFireAt('dc_a')).toBeUndefined();
    await advance(5 * MIN);
    expect(h.fired).toHaveLength(2);
    expect(jest.getTimerCount()).toBe(0);

    h.set({ row: live('dc_new'), timer: { cron: '0 * * * *' } });
    h.scheduler.refresh('dc_new');
    await advance(60 * MIN);
    expect(h.firedAt('dc_new')).toEqual(['2024-05-01T13:00:00.000Z']);
    await h.scheduler.stop();
  });

  it('refresh() without an id resyncs every source', async () => {
    const h = harness([{ row: live('dc_a'), timer: { intervalSeconds: 60 } }]);
    h.scheduler.start();
    h.remove('dc_a');
    h.set({ row: live('dc_b'), timer: { intervalSeconds: 30 } });
    h.scheduler.refresh();
    await advance(MIN);
    expect(h.firedAt()).toEqual(['2024-05-01T12:00:30.000Z', '2024-05-01T12:01:00.000Z']);
    expect(new Set(h.fired.map((f) => f.id))).toEqual(new Set(['dc_b']));
    await h.scheduler.stop();
  });

  it('skips a tick while the previous timer run of the source is still in flight', async () => {
    const h = harness([
      { row: live('dc_slow'), timer: { intervalSeconds: 60 } },
      { row: live('dc_other'), timer: { intervalSeconds: 60 } },
    ]);
    h.holdRuns();
    h.scheduler.start();
    await advance(MIN);
    expect(h.fired).toHaveLength(2);
    await advance(2 * MIN);
    // 12:02 and 12:03 skipped for both: their 12:01 runs are still running.
    expect(h.fired).toHaveLength(2);
    expect(h.logs.filter((l) => /dc_slow: tick at .* skipped/.test(l))).toHaveLength(2);
    h.finish();
    await advance(30 * SEC);
    expect(h.fired).toHaveLength(2);
    // The phase is kept: the next run is at 12:04, not 60 s after the run finished.
    await advance(30 * SEC);
    expect(h.firedAt('dc_slow')).toEqual(['2024-05-01T12:01:00.000Z', '2024-05-01T12:04:00.000Z']);
    await h.scheduler.stop();
  });

  it('a failing run is logged and the timer keeps firing', async () => {
    let calls = 0;
    const logs: string[] = [];
    const scheduler = new TimerScheduler({
      liveSources: () => [live('dc_a')],
      timerOf: () => ({ propName: 'timer', timer: { intervalSeconds: 1 } }),
      lastFire: () => undefined,
      fire: async () => {
        calls++;
        throw new Error('append failed');
      },
      log: (m) => logs.push(m),
    });
    scheduler.start();
    await advance(3 * SEC);
    expect(calls).toBe(3);
    expect(logs[0]).toMatch(/timer run of dc_a failed: append failed/);
    await scheduler.stop();
  });

  it('after downtime, fires once at start (not once per missed tick), then resumes', async () => {
    const h = harness([
      { row: live('dc_int'), timer: { intervalSeconds: 60 }, lastFire: T0 - 30 * MIN },
      { row: live('dc_cron'), timer: { cron: '0 * * * *' }, lastFire: T0 - 3 * 60 * MIN },
      { row: live('dc_fresh'), timer: { intervalSeconds: 60 }, lastFire: T0 - 20 * SEC },
      { row: live('dc_never'), timer: { cron: '0 * * * *' } },
    ]);
    h.scheduler.start();
    await advance(0);
    expect(h.fired.map((f) => f.id).sort()).toEqual(['dc_cron', 'dc_int']);
    expect(h.fired[0].event.timestamp).toBe(T0 / 1000);
    await advance(40 * SEC);
    expect(h.firedAt('dc_fresh')).toEqual(['2024-05-01T12:00:40.000Z']);
    await advance(20 * SEC);
    expect(h.firedAt('dc_int')).toEqual(['2024-05-01T12:00:00.000Z', '2024-05-01T12:01:00.000Z']);
    await advance(59 * MIN);
    expect(h.firedAt('dc_cron')).toEqual(['2024-05-01T12:00:00.000Z', '2024-05-01T13:00:00.000Z']);
    expect(h.firedAt('dc_never')).toEqual(['2024-05-01T13:00:00.000Z']);
    await h.scheduler.stop();
  });

  it('does not catch up when the cron slot after the last fire is still ahead', async () => {
    const h = harness([{ row: live('dc_cron'), timer: { cron: '0 * * * *' }, lastFire: T0 - 30 * MIN }]);
    jest.setSystemTime(T0 - 10 * MIN);
    h.scheduler.start();
    await advance(0);
    expect(h.fired).toHaveLength(0);
    await advance(10 * MIN);
    expect(h.firedAt()).toEqual(['2024-05-01T12:00:00.000Z']);
    await h.scheduler.stop();
  });

  it('waits longer than setTimeout allows by re-arming', async () => {
    const h = harness([{ row: live('dc_y'), timer: { cron: '@yearly' } }]);
    h.scheduler.start();
    const due = Date.parse('2025-01-01T00:00:00Z');
    await advance(due - T0 - SEC);
    expect(h.fired).toHaveLength(0);
    expect(jest.getTimerCount()).toBe(1);
    await advance(SEC);
    expect(h.firedAt()).toEqual(['2025-01-01T00:00:00.000Z']);
    await h.scheduler.stop();
  });

  it('stop() cancels the wake-up and waits for runs in flight', async () => {
    const h = harness([{ row: live('dc_a'), timer: { intervalSeconds: 60 } }]);
    h.holdRuns();
    h.scheduler.start();
    await advance(MIN);
    let stopped = false;
    const stopping = h.scheduler.stop().then(() => {
      stopped = true;
    });
    await advance(0);
    expect(stopped).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
    h.finish();
    await stopping;
    expect(stopped).toBe(true);
    h.scheduler.refresh('dc_a');
    await advance(5 * MIN);
    expect(h.fired).toHaveLength(1);
  });
});
