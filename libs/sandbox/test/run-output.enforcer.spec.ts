import { DEFAULT_RUN_OUTPUT_LIMITS } from '@app/sandbox';
import type { GuestOutcome } from '../src/guest-result.parser';
import { enforceRunOutput, MAX_RETURN_VALUE_BYTES } from '../src/run-output.enforcer';

const limits = { ...DEFAULT_RUN_OUTPUT_LIMITS, maxEmits: 3, maxEmitBytes: 20, maxRunEmitBytes: 40, maxDbWriteBytesPerRun: 30, maxDbKeyChars: 4 };

function outcome(extra: Partial<GuestOutcome>): GuestOutcome {
  return { ok: true, emits: [], dbWrites: [], ...extra };
}

describe('enforceRunOutput (the worker\'s check of a guest result)', () => {
  it('passes a result within every cap through unchanged', () => {
    const within = outcome({ emits: [{ event: 'a', meta: {} }], dbWrites: [{ key: 'k', value: 1 }], returnValue: 7 });
    expect(enforceRunOutput(within, limits)).toBe(within);
  });

  it('given the result text length, measures sizes only when the text could reach a byte cap', () => {
    const small = outcome({ emits: [{ event: 'ab', meta: {} }] });
    // 6 characters can never be more than 18 bytes: under every byte cap, nothing to measure.
    expect(enforceRunOutput(small, limits, undefined, 6)).toBe(small);
    // The real text of an over-sized event is long enough to be measured, and is refused.
    const big = outcome({ emits: [{ event: 'é'.repeat(12), meta: {} }] });
    const text = JSON.stringify(big);
    const cut = enforceRunOutput(big, limits, undefined, text.length);
    expect(cut.ok).toBe(false);
    expect(cut.error?.message).toMatch(/26 bytes as JSON, more than the 20 bytes allowed per event/);
    // Counts are checked whatever the size.
    const many = outcome({ emits: Array.from({ length: 5 }, () => ({ event: 1, meta: {} })) });
    expect(enforceRunOutput(many, limits, undefined, 2).emits).toHaveLength(3);
  });

  it('cuts emits at the count, bytes per event, bytes per run and meta lengths, and fails the run naming the cap', () => {
    const emits = (n: number, event: unknown = 1) => Array.from({ length: n }, () => ({ event, meta: {} }));
    const cases: [GuestOutcome['emits'], number, RegExp][] = [
      [emits(10), 3, /SLUICE_MAX_EMITS_PER_RUN=3/],
      [[...emits(1), { event: 'x'.repeat(19), meta: {} }], 1, /21 bytes as JSON, more than the 20 bytes allowed per event \(SLUICE_MAX_EMIT_BYTES=20\)/],
      [emits(3, 'x'.repeat(16)), 2, /would total 54 bytes .* \(SLUICE_MAX_RUN_EMIT_BYTES=40\)/],
      [[{ event: 1, meta: { summary: 's'.repeat(1025) } }], 0, /meta\.summary is 1025 characters long/],
      [[{ event: 1, meta: { name: 'n'.repeat(129) } }], 0, /meta\.name is 129 characters long/],
      [[{ event: 1, meta: { id: 'i'.repeat(257) } }], 0, /meta\.id is 257 characters long/],
    ];
    for (const [given, kept, message] of cases) {
      const cut = enforceRunOutput(outcome({ emits: given }), limits);
      expect(cut.emits).toEqual(given.slice(0, kept));
      expect(cut.ok).toBe(false);
      expect(cut.error).toMatchObject({ name: 'OutputLimitError', kind: 'invalid' });
      expect(cut.error!.message).toMatch(message);
    }
  });

  it('cuts db writes at a long key and at the bytes per run; a guest error is replaced by the breach', () => {
    const key = enforceRunOutput(outcome({ dbWrites: [{ key: 'ok', value: 1 }, { key: 'long!', value: 1 }, { key: 'b', value: 2 }] }), limits);
    expect(key.dbWrites).toEqual([{ key: 'ok', value: 1 }]);
    expect(key.error!.message).toMatch(/the key is 5 characters long, more than the 4 allowed/);
    const bytes = enforceRunOutput(outcome({
      ok: false, error: { name: 'Error', message: 'boom', kind: 'user' },
      dbWrites: [{ key: 'a', value: 'x'.repeat(10) }, { key: 'b', value: 'y'.repeat(10) }, { key: 'c', value: 'zzz' }],
    }), limits);
    expect(bytes.dbWrites.map((w) => w.key)).toEqual(['a', 'b']);
    expect(bytes.error!.message).toMatch(/db\.set\("c"\): this run would write 32 bytes to the db, more than the 30 bytes allowed per run/);
  });

  it('drops a return value over MAX_RETURN_VALUE_BYTES with a warning and keeps the outcome', () => {
    const warnings: string[] = [];
    const big = enforceRunOutput(outcome({ returnValue: 'x'.repeat(MAX_RETURN_VALUE_BYTES) }), limits, (w) => warnings.push(w));
    expect(big).toEqual({ ok: true, emits: [], dbWrites: [] });
    expect(warnings).toEqual([`the returned value is ${MAX_RETURN_VALUE_BYTES + 2} bytes as JSON, more than the ${MAX_RETURN_VALUE_BYTES} bytes kept: it was dropped`]);
  });

  it('cuts an action\'s sends at the count and the bytes like emits, and a cut result has no sends and no flow exit', () => {
    const sends = (n: number, payload: unknown = 1) => Array.from({ length: n }, () => ({ kind: 'sse' as const, params: { channel: 'c', payload } }));
    const counted = enforceRunOutput(outcome({ sends: sends(5), flowExit: { reason: 'r' }, exports: { a: 1 } }), { ...limits, maxEmitBytes: 100, maxRunEmitBytes: 1000 });
    expect(counted.ok).toBe(false);
    expect(counted.error?.message).toMatch(/at most 3 sends \(SLUICE_MAX_EMITS_PER_RUN=3\)/);
    expect(counted.sends).toBeUndefined();
    expect(counted.flowExit).toBeUndefined();
    expect(counted.exports).toEqual({ a: 1 });
    const big = enforceRunOutput(outcome({ sends: sends(1, 'x'.repeat(30)) }), limits);
    expect(big.sends).toBeUndefined();
    expect(big.error?.message).toMatch(/more than the 20 bytes allowed per send/);
    const within = outcome({ sends: sends(2), flowExit: { reason: 'r' } });
    expect(enforceRunOutput(within, { ...limits, maxEmitBytes: 100, maxRunEmitBytes: 200 })).toBe(within);
  });

  it('drops exports over MAX_EXPORT_BYTES and fails the run', () => {
    const cut = enforceRunOutput(outcome({ exports: { big: 'x'.repeat(1024 * 1024 + 1) } }), limits);
    expect(cut.ok).toBe(false);
    expect(cut.exports).toEqual({});
    expect(cut.error?.message).toMatch(/exports of this step would total/);
  });
});
