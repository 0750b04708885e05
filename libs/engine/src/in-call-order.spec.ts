import { InCallOrder } from './in-call-order';

describe('InCallOrder', () => {
  const later = <T>(value: T, ms: number) => new Promise<T>((res) => setTimeout(() => res(value), ms));

  it('applies a ready value at once, in the caller\'s turn, while nothing waits', () => {
    const order = new InCallOrder();
    const seen: string[] = [];
    const out = order.apply('a', (v) => {
      seen.push(v);
      return v.toUpperCase();
    });
    expect(out).toBe('A');
    expect(seen).toEqual(['a']);
  });

  it('keeps the order values were handed over in, when some must be waited for and later ones are ready', async () => {
    const order = new InCallOrder();
    const seen: string[] = [];
    const push = (v: string) => seen.push(v);
    const results = [
      order.apply(later('slow', 30), push),
      order.apply('ready-1', push),
      order.apply(later('quick', 1), push),
      order.apply('ready-2', push),
    ];
    expect(seen).toEqual([]);
    await Promise.all(results);
    expect(seen).toEqual(['slow', 'ready-1', 'quick', 'ready-2']);
    // Once nothing waits, a ready value is applied at once again.
    order.apply('after', push);
    expect(seen.at(-1)).toBe('after');
  });

  it('a rejected value rejects its own caller, and the values after it go on in order', async () => {
    const order = new InCallOrder();
    const seen: string[] = [];
    const first = order.apply(Promise.reject(new Error('read failed')), (v: string) => seen.push(v));
    const second = order.apply('next', (v) => seen.push(v));
    const thrower = order.apply('boom', () => {
      throw new Error('fn failed');
    });
    const third = order.apply(later('last', 5), (v) => seen.push(v));
    await expect(first).rejects.toThrow('read failed');
    await second;
    await expect(thrower).rejects.toThrow('fn failed');
    await third;
    expect(seen).toEqual(['next', 'last']);
  });
});
