import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import type { SqliteEventStore } from '@app/event-store';
import { EngineRuntime } from './engine-runtime';

/**
 * The engine opens its store with requests that do not linger on a saturated loop
 * (`SqliteEventStoreOptions.lingerOnlyWithTimeToSpare`) unless `SLUICE_LINGER_WHEN_SATURATED=on`.
 * What the option does is checked on the store (`sqlite-commit-path.int-spec.ts`); this is the wiring.
 */
describe('EngineRuntime: lingering on a saturated loop', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-runtime-linger-'));
  });

  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function lingersOnlyWithTimeToSpare(env: Record<string, string>): Promise<boolean> {
    const rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, ...env }), { sandbox: false });
    try {
      return (rt.store as unknown as SqliteEventStore).lingerOnlyWithTimeToSpare;
    } finally {
      await rt.store.close();
    }
  }

  it('by default requests do not linger once the loop is saturated', async () => {
    expect(await lingersOnlyWithTimeToSpare({})).toBe(true);
  });

  it('SLUICE_LINGER_WHEN_SATURATED=on keeps the linger', async () => {
    expect(await lingersOnlyWithTimeToSpare({ SLUICE_LINGER_WHEN_SATURATED: 'on' })).toBe(false);
  });
});

/**
 * The wiring of `InvocationHold`: a holdable run's invocation reaches the sandbox with a hold of the
 * request linger once such runs come fast, and with none otherwise. The sandbox's own method is
 * watched (its behaviour with a hold: `sandbox-hold.int-spec.ts`).
 */
describe('EngineRuntime: how long a run\'s invocation may wait for company', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-runtime-hold-'));
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The holds the sandbox was given for `count` invocations made back to back. */
  async function holdsFor(env: Record<string, string>, count: number, holdable: boolean): Promise<number[]> {
    const rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, ...env }), { sandbox: false });
    try {
      const holds: number[] = [];
      jest.spyOn(rt.sandbox, 'invoke').mockImplementation((_inv, holdMs = 0) => {
        holds.push(holdMs);
        return Promise.resolve({ ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [], dbWrites: [] });
      });
      const inv = { codeId: 'c', instanceId: 'i', bundle: '', entry: 'run' as const, props: {} };
      for (let i = 0; i < count; i++) await rt.invoke('u_1', inv, holdable);
      return holds;
    } finally {
      await rt.store.close();
    }
  }

  it('runs that come fast: each after the first is held for the request linger', async () => {
    const holds = await holdsFor({ SLUICE_REQUEST_LINGER_MS: '5' }, 6, true);
    expect(holds[0]).toBe(0);
    expect(holds.slice(1)).toEqual([5, 5, 5, 5, 5]);
  });

  it('runs nobody may hold, and any run with the linger off: never held', async () => {
    expect(await holdsFor({ SLUICE_REQUEST_LINGER_MS: '5' }, 6, false)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(await holdsFor({ SLUICE_REQUEST_LINGER_MS: '0' }, 6, true)).toEqual([0, 0, 0, 0, 0, 0]);
  });
});
