import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { EventTypes, Streams } from '@app/domain';
import { uuidv7 } from '@app/event-store';
import { EngineRuntime, PAGE_CACHE_KIB } from './engine-runtime';

// Every commit that follows a B-tree split walks SQLite's whole page cache (PAGE_CACHE_KIB says
// why): at 64 MB that cost a commit a third more once the cache was full
// (`BENCH_ONLY=cache npm run bench`). These tests keep the engine's connection at that size,
// including after a rebuild, which runs with a cache of its own.
describe("EngineRuntime: SQLite's page cache", () => {
  let dataDir: string;
  let rt: EngineRuntime;
  const cacheKib = () => -(rt.store.db.pragma('cache_size', { simple: true }) as number);

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-page-cache-'));
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
  });
  afterEach(async () => {
    await rt.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is PAGE_CACHE_KIB, at most 8 MB, with mmap reading the pages the WAL does not hold', () => {
    expect(PAGE_CACHE_KIB).toBeLessThanOrEqual(8192);
    expect(cacheKib()).toBe(PAGE_CACHE_KIB);
    expect(rt.store.db.pragma('mmap_size', { simple: true })).toBeGreaterThan(0);
  });

  it('comes back to PAGE_CACHE_KIB after a rebuild of the read models', async () => {
    const sourceId = 'dc_cache';
    for (let n = 0; n < 3; n++) {
      await rt.store.append(Streams.inbox(sourceId), [{
        type: EventTypes.httpRequestReceived,
        data: { sourceId, requestId: uuidv7(), method: 'POST', path: '/', url: 'http://sluice.test/e/k', query: {}, headers: {}, bodyRaw: '{}', body: {} },
        metadata: { actor: 'http' },
      }]);
    }
    // The rebuild sets a larger cache while it runs (REBUILD_CACHE_KIB): seen from its reads of the log.
    const during: number[] = [];
    const read = rt.store.readLogSync.bind(rt.store);
    jest.spyOn(rt.store, 'readLogSync').mockImplementation((after, maxCount) => {
      during.push(cacheKib());
      return read(after, maxCount);
    });
    await rt.rebuildReadModels();
    jest.restoreAllMocks();
    // The first read is the rebuild's (the runner's catch-up after it reads with the cache restored).
    expect(during.length).toBeGreaterThan(0);
    expect(during[0]).toBeGreaterThan(PAGE_CACHE_KIB);
    expect(cacheKib()).toBe(PAGE_CACHE_KIB);
  });
});
