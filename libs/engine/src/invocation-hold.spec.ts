import { InvocationHold } from './invocation-hold';

/** The hold a request's run gets on its way to the worker, by the pace of such runs (times in ms). */
describe('InvocationHold', () => {
  /** The holds given to runs `gapMs` apart, from t = 1000. */
  const holds = (hold: InvocationHold, count: number, gapMs: number, from = 1000) => Array.from({ length: count }, (_, i) => hold.next(from + i * gapMs));

  it('holds for the request linger while runs come within it (1,000/s with 2 ms), after the first', () => {
    const given = holds(new InvocationHold(2), 10, 1);
    expect(given[0]).toBe(0);
    expect(given.slice(1)).toEqual(Array(9).fill(2));
  });

  it('holds nothing at a pace that brings no company within the linger (200/s, 500/s)', () => {
    expect(holds(new InvocationHold(2), 20, 5)).toEqual(Array(20).fill(0));
    expect(holds(new InvocationHold(2), 20, 2)).toEqual(Array(20).fill(0));
  });

  it('stops holding when the pace falls off, and holds again once it is back', () => {
    const hold = new InvocationHold(2);
    expect(holds(hold, 8, 1).at(-1)).toBe(2);
    // A run after a pause: the window's mean gap now counts the pause.
    expect(hold.next(1100)).toBe(0);
    const again = holds(hold, 8, 1, 1101);
    expect(again.at(-1)).toBe(2);
  });

  it('never holds with the linger off (SLUICE_REQUEST_LINGER_MS=0)', () => {
    expect(holds(new InvocationHold(0), 10, 0.1)).toEqual(Array(10).fill(0));
  });
});

describe('InvocationHold on a saturated loop', () => {
  it('holds nothing while the loop is saturated, and holds again once it has time to spare', () => {
    let saturated = true;
    const hold = new InvocationHold(2, () => saturated);
    const given = Array.from({ length: 10 }, (_, i) => hold.next(1000 + i));
    expect(given).toEqual(Array(10).fill(0));
    saturated = false;
    expect(hold.next(1010)).toBe(2);
  });
});
