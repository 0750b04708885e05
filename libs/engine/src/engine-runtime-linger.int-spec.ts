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
