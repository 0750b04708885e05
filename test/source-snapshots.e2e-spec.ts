import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

/** Counts its runs in `db` and answers with the count and with `db` key `lie`, which only a forged snapshot puts there. */
const COUNTER = `
export default {
  name: "Snapshot counter",
  version: "0.1.0",
  props: { http: { type: "$.interface.http", customResponse: true }, db: "$.service.db" },
  async run(event) {
    const count = (this.db.get("count") || 0) + 1;
    this.db.set("count", count);
    this.$emit({ count });
    this.http.respond({ status: 200, body: { count, lie: this.db.get("lie") ?? null } });
  },
};`;

/**
 * Snapshots of a source's state in a real server: written as the source runs, used by the first
 * request after a restart (shown with a forged snapshot, which only a server that reads it
 * believes), and dropped by `admin rebuild`, after which the state comes from the log again.
 */
describe('source snapshots across restarts', () => {
  const env = { SLUICE_SOURCE_SNAPSHOT_EVERY: '10' };
  let server: SluiceProcess | undefined;
  let dataDir: string | undefined;

  afterAll(async () => {
    await server?.stop();
    if (dataDir) removeDataDir(dataDir);
  });

  const hit = async (url: string) => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(r.status).toBe(200);
    return (await r.json()) as { count: number; lie: string | null };
  };
  /** The endpoint as the running server names it (each start has its own port). */
  const endpoint = async (c: ReturnType<typeof api>, id: string) => (await c.get(`/v1/sources/${id}`)).body.data.endpoint_url as string;
  const snapshotRow = (sourceId: string) => {
    const db = new Database(join(dataDir!, 'sluice.db'));
    try {
      return db.prepare('SELECT revision, event_id, state FROM source_snapshots WHERE source_id = ?').get(sourceId) as
        { revision: number; event_id: string; state: string } | undefined;
    } finally {
      db.close();
    }
  };

  it('writes them while running, starts from one after a restart, and a rebuild drops them', async () => {
    server = await startSluice({ env });
    dataDir = server.dataDir;
    let c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: COUNTER })).body.data;
    for (let i = 1; i <= 30; i++) expect((await hit(src.endpoint_url)).count).toBe(i);
    await server.stop();

    const row = snapshotRow(src.id)!;
    expect(row).toBeDefined();
    const state = JSON.parse(row.state) as { db: { key: string; value?: unknown }[] };
    // 30 runs of 3 events and then some: a snapshot at least every 10 events, the last within the last run's reach.
    expect(row.revision).toBeGreaterThanOrEqual(80);
    expect(state.db).toContainEqual({ key: 'count', value: expect.any(Number) });

    // Forge the snapshot: a key the component never wrote. Only a state restored from the snapshot has it.
    const db = new Database(join(dataDir, 'sluice.db'));
    db.prepare('UPDATE source_snapshots SET state = ? WHERE source_id = ?')
      .run(JSON.stringify({ ...state, db: [...state.db, { key: 'lie', value: 'forged' }] }), src.id);
    db.close();

    server = await startSluice({ dataDir, env });
    c = api(server.url, server.apiKey);
    expect(await hit(await endpoint(c, src.id))).toEqual({ count: 31, lie: 'forged' });
    await server.stop();

    // A rebuild drops every snapshot: the state comes from the log alone, the count goes on.
    await runAdmin(dataDir, ['rebuild'], env);
    expect(snapshotRow(src.id)).toBeUndefined();
    server = await startSluice({ dataDir, env });
    c = api(server.url, server.apiKey);
    expect(await hit(await endpoint(c, src.id))).toEqual({ count: 32, lie: null });
  }, 90_000);
});
