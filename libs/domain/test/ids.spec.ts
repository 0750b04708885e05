import { newId, newRunId } from '@app/domain';

describe('newRunId', () => {
  it('is run_ and 22 URL-safe characters, as other ids are', () => {
    const id = newRunId();
    expect(id).toMatch(/^run_[0-9A-Za-z]{22}$/);
    expect(newId('run')).toMatch(/^run_[0-9A-Za-z]{22}$/);
  });

  it('starts with its time, so ids made later sort after earlier ones in byte order (SQLite\'s)', () => {
    const t = 1764950400000;
    const ids = [t - 62 ** 3, t - 1, t, t + 1, t + 62, t + 86_400_000].map((ms) => newRunId(ms));
    expect([...ids].sort()).toEqual(ids);
    // Two ids of one millisecond share their first 8 characters and differ in the rest.
    const [a, b] = [newRunId(t), newRunId(t)];
    expect(a.slice(0, 12)).toBe(b.slice(0, 12));
    expect(a).not.toBe(b);
    expect(newRunId(0).slice(4, 12)).toBe('00000000');
  });
});

describe('newId', () => {
  it('draws every character of its alphabet about equally often', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) for (const c of newId('u').slice(2)) counts.set(c, (counts.get(c) ?? 0) + 1);
    // 44,000 characters over 62: about 710 each; with the old b % 62 the first 8 came 1.24x as often.
    expect(counts.size).toBe(62);
    const low = ['0', '1', '2', '3', '4', '5', '6', '7'].reduce((a, c) => a + counts.get(c)!, 0) / 8;
    const high = ['w', 'x', 'y', 'z', 'W', 'X', 'Y', 'Z'].reduce((a, c) => a + counts.get(c)!, 0) / 8;
    expect(low / high).toBeGreaterThan(0.85);
    expect(low / high).toBeLessThan(1.15);
    expect(new Set(Array.from({ length: 1000 }, () => newId('u'))).size).toBe(1000);
  });
});
