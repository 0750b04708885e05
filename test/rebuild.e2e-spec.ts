import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, eventually, removeDataDir, runAdmin, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE } from './support/fixtures';

/** Every `rm_` table of the data dir's store, rows ordered by every column (row order on disk is not content), and their indexes. */
function readModelTables(dataDir: string): Record<string, unknown[]> {
  const db = new Database(join(dataDir, 'sluice.db'), { readonly: true });
  try {
    const out: Record<string, unknown[]> = {};
    const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name").all() as { name: string }[];
    for (const { name } of names) {
      const n = (db.prepare(`PRAGMA table_info(${name})`).all() as unknown[]).length;
      out[name] = db.prepare(`SELECT * FROM ${name} ORDER BY ${Array.from({ length: n }, (_, i) => i + 1).join(', ')}`).all();
    }
    out.indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name").all();
    return out;
  } finally {
    db.close();
  }
}

describe('admin rebuild: every read model rebuilt from the log gives the same answers', () => {
  it('answers equal before and after `npm run admin -- rebuild`', async () => {
    const receiver = new WebhookReceiver();
    await receiver.start();
    let server = await startSluice();
    const dataDir = server.dataDir;
    try {
      const c = api(server.url, server.apiKey);
      const whs: { id: string }[] = [];
      for (let i = 0; i < 3; i++) whs.push((await c.post('/v1/webhooks', { url: receiver.url, name: `w${i}`, description: `d${i}` })).body.data);
      await c.del(`/v1/webhooks/${whs[2].id}`);
      await c.put(`/v1/webhooks/${whs[1].id}`, { name: 'renamed' });
      const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'r' })).body.data;
      const src2 = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'r' })).body.data;
      await c.put(`/v1/sources/${src2.id}`, { active: false });
      await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: whs[0].id });
      await c.post('/v1/subscriptions', { emitter_id: 'dc_*', listener_id: whs[1].id, event_name: 'x' });
      for (let i = 0; i < 120; i++) {
        await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      }
      await eventually(() => receiver.deliveredIds().length === 120, 20_000, 'deliveries');
      await c.del(`/v1/sources/${src.id}/events`, { start_id: '0-0', end_id: '0-0' });

      const snapshot = async (base: string) => {
        const k = api(base, server.apiKey);
        const strip = (s: Record<string, unknown>) => ({ ...s, endpoint_url: undefined, configured_props: undefined });
        return {
          webhooks: (await k.get('/v1/users/me/webhooks', { limit: '100' })).body,
          subscriptions: (await k.get('/v1/users/me/subscriptions', { limit: '100' })).body,
          sources: (await k.get('/v1/users/me/sources', { limit: '100' })).body.data.map(strip),
          summaries: (await k.get(`/v1/sources/${src.id}/event_summaries`, { expand: 'event' })).body,
          deliveries: (await k.get(`/v1/webhooks/${whs[0].id}/deliveries`, { limit: '100' })).body,
          logs: (await k.get(`/v1/sources/${src.id}/logs`)).body,
          component: (await k.get(`/v1/components/${src.component_id}`)).body,
        };
      };
      await eventually(async () => {
        const d = (await c.get(`/v1/webhooks/${whs[0].id}/deliveries`, { limit: '100' })).body.data;
        return d.filter((x: { status: string }) => x.status === 'delivered').length === 100;
      }, 10_000, 'deliveries recorded');
      const before = await snapshot(server.url);
      expect(before.summaries.data).toHaveLength(100);
      expect(before.sources).toHaveLength(2);
      await server.stop();
      const incremental = readModelTables(dataDir);
      expect(incremental.rm_deliveries.length).toBeGreaterThanOrEqual(100);

      const out = JSON.parse(await runAdmin(dataDir, ['rebuild']));
      expect(out.rebuilt).toBe(true);
      expect(out.events).toBeGreaterThan(200);
      // The rebuild (large batches, indexes after the load) holds exactly what the server folded event by event.
      expect(readModelTables(dataDir)).toEqual(incremental);
      // With normal locking (the default, above) the log is read ahead by a worker thread on a
      // connection of its own; exclusive locking keeps other connections out, and the rebuild
      // reads the log on its own connection: the same tables.
      expect(JSON.parse(await runAdmin(dataDir, ['rebuild'], { SLUICE_SQLITE_LOCKING: 'exclusive' })).rebuilt).toBe(true);
      expect(readModelTables(dataDir)).toEqual(incremental);

      server = await startSluice({ dataDir });
      const after = await snapshot(server.url);
      expect(after).toEqual(before);
    } finally {
      await server.stop();
      await receiver.stop();
      removeDataDir(dataDir);
    }
  });

  it('a rebuild cut short (rm_meta still says rebuilding) is redone from the log when the server starts', async () => {
    let server = await startSluice();
    const dataDir = server.dataDir;
    try {
      const c = api(server.url, server.apiKey);
      for (let i = 0; i < 3; i++) await c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', name: `w${i}`, description: '' });
      const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'cut' })).body.data;
      for (let i = 0; i < 30; i++) {
        await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      }
      await eventually(async () => (await c.get(`/v1/sources/${src.id}/event_summaries`)).body.data.length === 30, 10_000, 'emits');
      const webhooks = (await c.get('/v1/users/me/webhooks', { limit: '100' })).body;
      await server.stop();
      const complete = readModelTables(dataDir);

      // What a rebuild killed midway leaves: the marker, part of the rows, a checkpoint short of the head.
      const db = new Database(join(dataDir, 'sluice.db'));
      db.exec(`UPDATE rm_meta SET value = 'rebuilding' WHERE key = 'version';
        DELETE FROM rm_webhooks WHERE rowid > 1; DELETE FROM rm_source_events; UPDATE checkpoints SET position = 5 WHERE name = 'read-models';`);
      db.close();

      server = await startSluice({ dataDir });
      const k = api(server.url, server.apiKey);
      expect((await k.get('/v1/users/me/webhooks', { limit: '100' })).body).toEqual(webhooks);
      expect((await k.get(`/v1/sources/${src.id}/event_summaries`)).body.data).toHaveLength(30);
      await server.stop();
      expect(readModelTables(dataDir)).toEqual(complete);
    } finally {
      await server.stop();
      removeDataDir(dataDir);
    }
  });
});
