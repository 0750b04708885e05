import { EvictionTimer } from '../src/eviction.timer';

describe('EvictionTimer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A timer over a scripted clock; `next` gives what each look returns. */
  function setup(next: (number | undefined)[]) {
    let now = 0;
    const looks: number[] = [];
    const timer = new EvictionTimer(() => {
      looks.push(now);
      return next.shift();
    }, () => now);
    const advance = (ms: number) => {
      now += ms;
      jest.advanceTimersByTime(ms);
    };
    return { timer, looks, advance };
  }

  it('looks at the deadline it was given, then at each deadline a look reports, and stops when there is none', () => {
    const { timer, looks, advance } = setup([2_500, undefined]);
    expect(timer.armed).toBe(false);
    timer.lookBy(1_000);
    expect(timer.armed).toBe(true);
    advance(999);
    expect(looks).toEqual([]);
    advance(1);
    expect(looks).toEqual([1_000]);
    advance(1_500);
    expect(looks).toEqual([1_000, 2_500]);
    expect(timer.armed).toBe(false);
    advance(60_000);
    expect(looks).toHaveLength(2);
  });

  it('an earlier deadline brings the look forward; a later one does not put it off', () => {
    const { timer, looks, advance } = setup([undefined, undefined]);
    timer.lookBy(5_000);
    timer.lookBy(9_000);
    timer.lookBy(2_000);
    advance(2_000);
    expect(looks).toEqual([2_000]);
    expect(timer.armed).toBe(false);
  });

  it('stop cancels the look and keeps it from being armed again', () => {
    const { timer, looks, advance } = setup([]);
    timer.lookBy(100);
    timer.stop();
    timer.lookBy(50);
    advance(1_000);
    expect(looks).toEqual([]);
    expect(timer.armed).toBe(false);
  });
});
