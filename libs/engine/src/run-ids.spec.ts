import { runIdsFor } from './source-actor';

describe('runIdsFor', () => {
  it('derives the run id and the emit ids from the request, so a re-run gets the same ones', () => {
    const a = runIdsFor('0192f5a0-0000-7000-8000-0000000000aa');
    const b = runIdsFor('0192f5a0-0000-7000-8000-0000000000aa');
    expect(b.runId).toBe(a.runId);
    const emitsA = [a.newEmitId(), a.newEmitId(), a.newEmitId()];
    expect([b.newEmitId(), b.newEmitId(), b.newEmitId()]).toEqual(emitsA);
    // Distinct per emit, distinct from the run id, UUIDv8-shaped, and sorting with the request:
    // they share its 48-bit timestamp, so the log's id index is written near its end.
    expect(new Set([a.runId, ...emitsA]).size).toBe(4);
    for (const id of [a.runId, ...emitsA]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(id.slice(0, 13)).toBe('0192f5a0-0000');
    }
  });

  it('keeps the first 48 bits of a request id that is another UUID (a listener dispatch), and hashes what is no UUID', () => {
    // A dispatch of an emit recorded with ordered ids: the emit's timestamp, then a hash.
    const dispatch = '0192f5a0-0000-8a3b-9d4e-0a1b2c3d4e5f';
    const a = runIdsFor(dispatch);
    expect(a.runId).toBe(runIdsFor(dispatch).runId);
    const emits = [a.newEmitId(), a.newEmitId()];
    expect(new Set([a.runId, ...emits]).size).toBe(3);
    for (const id of [a.runId, ...emits]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(id.slice(0, 13)).toBe('0192f5a0-0000');
    }
    const b = runIdsFor('not-a-uuid');
    expect(b.runId).toBe(runIdsFor('not-a-uuid').runId);
    expect(b.runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('gives other requests other ids', () => {
    const a = runIdsFor('0192f5a0-0000-7000-8000-0000000000aa');
    const b = runIdsFor('0192f5a0-0000-7000-8000-0000000000bb');
    expect(b.runId).not.toBe(a.runId);
    expect(b.newEmitId()).not.toBe(a.newEmitId());
  });

  it('gives a run without a request (a timer, run now) fresh time-ordered ids', () => {
    const a = runIdsFor(undefined);
    const b = runIdsFor(undefined);
    expect(a.runId).not.toBe(b.runId);
    expect(a.newEmitId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });
});
