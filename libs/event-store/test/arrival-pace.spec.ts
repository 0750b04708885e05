import { ARRIVAL_PACE_WINDOW, ArrivalPace, LINGER_BUSY_ARRIVALS } from '../src/arrival-pace';

describe('ArrivalPace', () => {
  /** A pace fed `count` arrivals `gap` ms apart, the first at `start`. */
  function fed(count: number, gap: number, start = 1000): ArrivalPace {
    const pace = new ArrivalPace();
    for (let i = 0; i < count; i++) pace.note(start + i * gap);
    return pace;
  }

  it('knows no pace before two arrivals, and is never busy then', () => {
    expect(new ArrivalPace().gap).toBe(Infinity);
    expect(fed(1, 1).gap).toBe(Infinity);
    expect(fed(1, 1).busy(1000, 1000)).toBe(false);
  });

  it('measures the mean gap of the arrivals in its window', () => {
    expect(fed(5, 2).gap).toBe(2);
    // A burst in one turn: a gap of about nothing, busy for any linger.
    expect(fed(8, 0).gap).toBe(0);
    expect(fed(8, 0).busy(1000.5, 2)).toBe(true);
  });

  it(`is busy when ${LINGER_BUSY_ARRIVALS} arrivals or more are expected within the linger`, () => {
    // 1 ms apart: 2 arrivals within a 2 ms linger, 1.4 within 1.4 ms.
    expect(fed(8, 1).busy(1007, 2)).toBe(true);
    expect(fed(8, 1).busy(1007, 1.5)).toBe(true);
    expect(fed(8, 1).busy(1007, 1.4)).toBe(false);
    // 5 ms apart (200/s): never within a 2 ms linger.
    expect(fed(8, 5).busy(1035, 2)).toBe(false);
  });

  it('counts only the last arrivals: a burst after a quiet stretch is busy once it fills the window', () => {
    const pace = fed(ARRIVAL_PACE_WINDOW, 100);
    let t = 1000 + (ARRIVAL_PACE_WINDOW - 1) * 100;
    const busyAfter: boolean[] = [];
    for (let i = 0; i < ARRIVAL_PACE_WINDOW; i++) {
      t += 0.5;
      pace.note(t);
      busyAfter.push(pace.busy(t, 2));
    }
    // While a 100 ms gap is in the window the mean is too slow; once only the burst is left, busy.
    expect(busyAfter.slice(0, ARRIVAL_PACE_WINDOW - 2).every((b) => !b)).toBe(true);
    expect(busyAfter[ARRIVAL_PACE_WINDOW - 1]).toBe(true);
    expect(pace.gap).toBe(0.5);
  });

  it('is not busy once the pace broke off: no arrival within the last linger', () => {
    // The last arrival at 1007.
    const pace = fed(8, 1);
    expect(pace.busy(1009, 2)).toBe(true);
    expect(pace.busy(1009.5, 2)).toBe(false);
  });
});
