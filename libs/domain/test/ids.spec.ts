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
