import { uuidv5like, uuidv7 } from '@app/event-store';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('uuidv7', () => {
  it('is an RFC 9562 version 7 UUID with the RFC variant', () => {
    const id = uuidv7();
    expect(id).toMatch(UUID);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
  });

  it('carries the current Unix time in milliseconds in its first 48 bits', () => {
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after + 1);
  });

  it('sorts in generation order, also for many ids within one millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1]).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays ordered when the wall clock steps back', () => {
    const first = uuidv7();
    const now = jest.spyOn(Date, 'now').mockReturnValue(Date.now() - 60_000);
    try {
      const second = uuidv7();
      expect(second > first).toBe(true);
    } finally {
      now.mockRestore();
    }
  });
});

describe('uuidv5like', () => {
  it('is deterministic and formatted as a version 5 UUID', () => {
    const id = uuidv5like('delivery', 'evt-1/wh_1');
    expect(id).toBe(uuidv5like('delivery', 'evt-1/wh_1'));
    expect(id).toMatch(UUID);
    expect(id[14]).toBe('5');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
  });

  it('gives the ids it always gave (ids derived before are stored in logs and read models)', () => {
    expect(uuidv5like('sluice.delivery', '0191e3a0-0000-7000-8000-000000000001/wh_1')).toBe('7159e9cc-f766-5b97-aad3-6c482a7f3165');
    expect(uuidv5like('sluice.logs-emit', 'run_\u00e9')).toBe('052602b4-96fc-5fd7-922e-2bd03f307fbf');
  });

  it('differs when the namespace or the name differs, without ambiguity at the boundary', () => {
    const ids = [uuidv5like('a', 'b'), uuidv5like('b', 'a'), uuidv5like('ab', ''), uuidv5like('', 'ab'), uuidv5like('a', 'c')];
    expect(new Set(ids).size).toBe(ids.length);
  });
});
