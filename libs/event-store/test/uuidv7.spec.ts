import { isUuidv7, uuidTimeMs, uuidv5like, uuidv7, uuidv8fromV7, uuidv8at, uuidv8ordered } from '@app/event-store';

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

describe('uuidv8ordered', () => {
  const v7 = '0191a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b';
  const v8 = '0191a2b3-c4d6-8123-9456-789abcdef012';

  it('is deterministic, a version 8 UUID with the RFC variant, and keeps the first 48 bits of a UUID of any version', () => {
    for (const id of [v7, v8]) {
      const a = uuidv8ordered(id, 'ns', 'name');
      expect(a).toBe(uuidv8ordered(id, 'ns', 'name'));
      expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(a.slice(0, 13)).toBe(id.slice(0, 13));
    }
  });

  it('gives the ids it always gave (delivery ids derived with it are named in the log)', () => {
    expect(uuidv8ordered(v8, 'sluice.delivery', `${v8}/wh_1`)).toBe('0191a2b3-c4d6-84b7-ba3d-70cf7129a4fb');
    // From a UUIDv7 and from what is no UUID, the ids it gave before it kept other UUIDs' 48 bits too.
    expect(uuidv8ordered(v7, 'sluice.run-id', v7)).toBe('0191a2b3-c4d5-8e3c-95fa-6677e65ab369');
    expect(uuidv8ordered('q-dispatch-1', 'sluice.emit-id', 'q-dispatch-1/0')).toBe('f1113977-329b-840e-8925-acb621c99659');
  });

  it('differs by name and namespace, and sorts ids of later timestamps after earlier ones', () => {
    const ids = new Set(['a', 'b', 'c'].flatMap((name) => [uuidv8ordered(v8, 'ns', name), uuidv8ordered(v8, 'other', name)]));
    expect(ids.size).toBe(6);
    const later = '0191a2b3-c4d7-8000-8000-000000000000';
    expect(uuidv8ordered(later, 'ns', 'a') > uuidv8ordered(v8, 'ns', 'zzz')).toBe(true);
  });

  it('hashes all of it from a namespace and name when the id is no UUID', () => {
    const a = uuidv8ordered('em_1', 'ns', 'name');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.slice(0, 4)).not.toBe('em_1');
    expect(uuidv8ordered('em_2', 'ns', 'name')).toBe(a);
    // Only a UUID's lower-case text gives its first 48 bits: not upper case, another length, or dashes elsewhere.
    for (const notUuid of [v8.toUpperCase(), `${v8}\n`, v8.slice(0, 35), `${v8.slice(0, 8)}${v8.slice(9, 10)}-${v8.slice(10)}`, v8.replace('c', 'g')]) {
      expect(uuidv8ordered(notUuid, 'ns', 'name')).toBe(a);
    }
  });
});

describe('uuidv8fromV7', () => {
  const V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('is deterministic, a version 8 UUID with the RFC variant, and keeps the UUIDv7\'s timestamp', () => {
    const v7 = uuidv7();
    const id = uuidv8fromV7(v7, 'ns', 3);
    expect(id).toBe(uuidv8fromV7(v7, 'ns', 3));
    expect(id).toMatch(V8);
    expect(id.slice(0, 13)).toBe(v7.slice(0, 13));
    expect(isUuidv7(v7)).toBe(true);
    expect(isUuidv7(id)).toBe(false);
  });

  it('gives the ids it always gave (a re-run after a crash must derive the ids its first run stored)', () => {
    expect(uuidv8fromV7('0192f5a0-0000-7000-8000-0000000000aa', 'sluice.ids-of-request', 0)).toBe('0192f5a0-0000-8b40-8a39-414071b9f2a0');
    expect(uuidv8fromV7('0192f5a0-0000-7000-8000-0000000000aa', 'sluice.ids-of-request', 1)).toBe('0192f5a0-0000-8fa2-a381-eb3342b876c6');
    expect(uuidv8fromV7('019ab2c4-1f00-7a3c-9b2e-5c1d0e4f7a88', 'other', 70_000)).toBe(uuidv8fromV7('019ab2c4-1f00-7a3c-9b2e-5c1d0e4f7a88', 'other', 70_000));
  });

  it('is distinct for distinct indexes and namespaces of one UUIDv7', () => {
    const v7 = uuidv7();
    const ids = [...Array.from({ length: 5_000 }, (_, i) => uuidv8fromV7(v7, 'a', i)), ...Array.from({ length: 5_000 }, (_, i) => uuidv8fromV7(v7, 'b', i))];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('tells apart UUIDv7s that differ in any one of the bits it keeps or XORs', () => {
    // Every hex digit after the version, changed to each other value the UUIDv7 may hold there:
    // an XOR that lost a bit would map two of them to one id.
    const v7 = '0192f5a0-0000-7123-9456-789abcdef012';
    const seen = new Set([uuidv8fromV7(v7, 'ns', 1)]);
    let variants = 1;
    for (const at of [15, 16, 17, 19, 20, 21, 22, ...Array.from({ length: 12 }, (_, i) => 24 + i)]) {
      for (const digit of at === 19 ? '89ab' : '0123456789abcdef') {
        if (digit === v7[at]) continue;
        const other = v7.slice(0, at) + digit + v7.slice(at + 1);
        expect(isUuidv7(other)).toBe(true);
        seen.add(uuidv8fromV7(other, 'ns', 1));
        variants++;
      }
    }
    expect(seen.size).toBe(variants);
  });

  it('keeps the ids of UUIDv7s that differ in a few low bits apart across indexes (the index is no XOR of its own)', () => {
    // Requests ...00 to ...3f, 64 ids each: an index XORed into the low bits would give request
    // ...01's id 0 to request ...00's id 1.
    const v7s = Array.from({ length: 64 }, (_, i) => `018f0000-0000-7000-8000-0000000000${i.toString(16).padStart(2, '0')}`);
    const ids = v7s.flatMap((v7) => Array.from({ length: 64 }, (_, index) => uuidv8fromV7(v7, 'sluice.ids-of-request', index)));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('derives distinct ids from many UUIDv7s of the same milliseconds, as the hashed derivation does', () => {
    const v7s = Array.from({ length: 20_000 }, () => uuidv7());
    const ids = v7s.flatMap((v7) => [uuidv8fromV7(v7, 'ns', 0), uuidv8fromV7(v7, 'ns', 1), uuidv8fromV7(v7, 'ns', 2)]);
    expect(new Set(ids).size).toBe(ids.length);
    // Ordered with their UUIDv7 by the timestamp, as uuidv8ordered's are.
    for (const v7 of v7s.slice(0, 50)) expect(uuidv8fromV7(v7, 'ns', 0).slice(0, 13)).toBe(uuidv8ordered(v7, 'ns', v7).slice(0, 13));
  });
});

describe('uuidv8at', () => {
  const ms = 0x0191a2b3c4d5;

  it('starts with the given Unix millisecond, is deterministic, a version 8 UUID with the RFC variant', () => {
    const a = uuidv8at(ms, 'ns', 'name');
    expect(a).toBe(uuidv8at(ms, 'ns', 'name'));
    expect(a).toMatch(/^0191a2b3-c4d5-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The rest is what uuidv8ordered derives for the same namespace and name.
    expect(a).toBe(uuidv8ordered('0191a2b3-c4d5-7000-8000-000000000000', 'ns', 'name'));
  });

  it('gives the ids it always gave (workflow emit ids derived with it are in the log)', () => {
    expect(uuidv8at(1764950400000, 'sluice.workflow-emit', 'run_1/emit:0:0')).toBe('019aef3d-dc00-833b-b6c4-ed110f8c97ae');
  });

  it('differs by name, sorts later times after earlier ones, and takes 0 for a time it cannot hold', () => {
    expect(uuidv8at(ms, 'ns', 'a')).not.toBe(uuidv8at(ms, 'ns', 'b'));
    expect(uuidv8at(ms + 1, 'ns', 'a') > uuidv8at(ms, 'ns', 'b')).toBe(true);
    for (const bad of [-1, 2 ** 48, Number.NaN, 1.5]) expect(uuidv8at(bad, 'ns', 'a').slice(0, 13)).toBe('00000000-0000');
  });
});

describe('uuidTimeMs', () => {
  it('reads the millisecond of a UUIDv7 and of the version 8 ids derived from one; nothing from other UUIDs or other text', () => {
    const before = Date.now();
    const v7 = uuidv7();
    expect(uuidTimeMs(v7)).toBeGreaterThanOrEqual(before);
    expect(uuidTimeMs(v7)).toBeLessThanOrEqual(Date.now());
    expect(uuidTimeMs(uuidv8at(1764950400000, 'ns', 'a'))).toBe(1764950400000);
    expect(uuidTimeMs(uuidv8ordered(v7, 'ns', 'a'))).toBe(uuidTimeMs(v7));
    expect(uuidTimeMs(uuidv5like('ns', 'a'))).toBeUndefined();
    expect(uuidTimeMs(v7.toUpperCase())).toBeUndefined();
    expect(uuidTimeMs('em_1')).toBeUndefined();
  });
});
