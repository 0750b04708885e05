import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE, FLOOD_SOURCE } from './support/fixtures';

// Small caps so a flood is quick to produce; the defaults are 1,000 emits, 1 MB, 16 MB, 1 MB, 8 MB.
const LIMITS = {
  SLUICE_MAX_EMITS_PER_RUN: '50',
  SLUICE_MAX_EMIT_BYTES: '10000',
  SLUICE_MAX_RUN_EMIT_BYTES: '200000',
  SLUICE_MAX_DB_WRITE_BYTES_PER_RUN: '20000',
  SLUICE_MAX_DB_BYTES_PER_SOURCE: '50000',
};


/** A source whose manual run follows its "plan" prop: write too much in one run, grow the db, or only count runs. */
const DB_SOURCE = `
export default {
  name: "Db writer",
  version: "0.1.0",
  props: { db: "$.service.db", plan: { type: "string" } },
  async run() {
    const n = (this.db.get("n") || 0) + 1;
    this.db.set("n", n);
    if (this.plan === "run-cap") for (let i = 0; i < 30; i++) this.db.set("r" + i, "x".repeat(1000));
    if (this.plan === "grow") this.db.set("g" + n, "y".repeat(15000));
    this.$emit({ n, keys: ["n", "g1", "g2", "g3", "g4"].filter((k) => this.db.get(k) !== undefined) });
  },
};`;

/** A source whose run does one thing the caps refuse, picked by its "what" prop. */
const SHAPE_SOURCE = `
export default {
  name: "Shapes",
  version: "0.1.0",
  props: { db: "$.service.db", what: { type: "string" } },
  async run() {
    if (this.what === "big-event") this.$emit({ blob: "z".repeat(10001) });
    if (this.what === "long-key") this.db.set("k".repeat(257), 1);
    if (this.what === "long-summary") this.$emit({}, { summary: "s".repeat(1025) });
    if (this.what === "long-name") this.$emit({}, { name: "c".repeat(129) });
    if (this.what === "long-id") this.$emit({}, { id: "i".repeat(257) });
    if (this.what === "fine") this.$emit({ ok: true }, { name: "c".repeat(128), summary: "s".repeat(1024), id: "i".repeat(256) });
  },
};`;

/**
 * A source that bypasses the guest-side db checks: the runtime serialises its db writes with
 * Array.prototype.join, which the component replaces to report a write the runtime never saw.
 */
const TAMPERING_DB_SOURCE = `
const realJoin = Array.prototype.join;
export default {
  name: "Sneaky",
  version: "0.1.0",
  props: { db: "$.service.db" },
  async run() {
    const n = (this.db.get("n") || 0) + 1;
    let calls = 0;
    Array.prototype.join = function (sep) {
      calls++;
      if (calls < 2) return realJoin.call(this, sep);
      Array.prototype.join = realJoin;
      return realJoin.call([JSON.stringify({ key: "n", value: n }), JSON.stringify({ key: "g" + n, value: "y".repeat(15000) })], ",");
    };
  },
};`;

describe('caps on what one run may produce (two accounts)', () => {
  let server: SluiceProcess;
  let keyB: string;
  const receiverB = new WebhookReceiver();

  beforeAll(async () => {
    const dir = newDataDir();
    const keyA = 'sk_alice_0123456789abcdef';
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', keyA]);
    keyB = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    await receiverB.start();
    server = await startSluice({ dataDir: dir, env: LIMITS, apiKey: keyA });
  });
  afterAll(async () => {
    await server?.stop();
    await receiverB.stop();
    if (server) removeDataDir(server.dataDir);
  });

  async function deploy(key: string, code: string, props: Record<string, unknown> = {}) {
    const res = await api(server.url, key).post('/v1/sources', { component_code: code, configured_props: props });
    expect(res.status === 200 ? 200 : JSON.stringify(res.body)).toBe(200);
    return res.body.data as { id: string; endpoint_url: string };
  }

  async function runNow(id: string) {
    const res = await api(server.url, server.apiKey).post(`/v1/sources/${id}/run`);
    expect(res.status).toBe(200);
    return res.body.data as { ok: boolean; error: { name: string; message: string } | null; emitted: { event: any; metadata: any }[]; logs: { message: string }[] };
  }

  it('a 20-byte request cannot make more than SLUICE_MAX_EMITS_PER_RUN events; the run\'s logs say why; the other account is served', async () => {
    const a = api(server.url, server.apiKey);
    const b = api(server.url, keyB);
    const flood = await deploy(server.apiKey, FLOOD_SOURCE);
    const echoB = await deploy(keyB, ECHO_SOURCE);
    const whB = (await b.post('/v1/webhooks', { url: receiverB.url, name: 'b' })).body.data;
    receiverB.secrets = [whB.signing_secret];
    expect((await b.post('/v1/subscriptions', { emitter_id: echoB.id, listener_id: whB.id })).status).toBe(200);

    const body = '{"n":100000}';
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(20);
    expect((await fetch(flood.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(200);
    const logs = await eventually(async () => {
      const l = (await a.get(`/v1/sources/${flood.id}/logs`)).body.data as { kind: string; ok?: boolean; logs: { message: string }[] }[];
      return l.find((x) => x.kind === 'run');
    }, 20_000, 'the flood run recorded');
    expect(logs!.ok).toBe(false);
    expect(logs!.logs.at(-1)!.message).toMatch(/RangeError: this\.\$emit: a run may emit at most 50 events \(SLUICE_MAX_EMITS_PER_RUN=50\)/);
    const stored = (await a.get(`/v1/sources/${flood.id}/event_summaries`, { limit: '100', expand: 'event' })).body.data as { metadata: { name: string }; event: any }[];
    const data = stored.filter((e) => e.metadata.name !== '$errors');
    expect(data).toHaveLength(50);
    expect(data.map((e) => e.event.i).sort((x, y) => x - y)).toEqual([...Array(50).keys()]);
    expect(stored.filter((e) => e.metadata.name === '$errors')).toHaveLength(1);

    expect((await fetch(echoB.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":7}' })).status).toBe(200);
    await eventually(() => receiverB.deliveredIds().length === 1, 20_000, 'B\'s delivery');
    expect((receiverB.received[0].json as { n: number }).n).toBe(7);
  });

  it('refuses an event over SLUICE_MAX_EMIT_BYTES, naming the limit', async () => {
    const run = await runNow((await deploy(server.apiKey, SHAPE_SOURCE, { what: 'big-event' })).id);
    expect(run.ok).toBe(false);
    expect(run.error!.message).toBe('this.$emit: the event is 10012 bytes as JSON, more than the 10000 bytes allowed per event (SLUICE_MAX_EMIT_BYTES=10000)');
    expect(run.emitted.map((e) => e.metadata.name)).toEqual(['$errors']);
  });

  it('refuses over-long db keys, summaries, channel names and ids; values at the caps pass', async () => {
    const expected: Record<string, RegExp> = {
      'long-key': /db\.set\("k{64}\.\.\."\): the key is 257 characters long, more than the 256 allowed/,
      'long-summary': /meta\.summary is 1025 characters long, more than the 1024 allowed/,
      'long-name': /meta\.name is 129 characters long, more than the 128 allowed/,
      'long-id': /meta\.id is 257 characters long, more than the 256 allowed/,
    };
    for (const [what, message] of Object.entries(expected)) {
      const src = await deploy(server.apiKey, SHAPE_SOURCE, { what });
      const run = await runNow(src.id);
      expect(run.ok).toBe(false);
      expect(run.error!.message).toMatch(message);
      expect(run.logs.at(-1)!.message).toMatch(message);
      expect(run.emitted.map((e) => e.metadata.name)).toEqual(['$errors']);
      const history = (await api(server.url, server.apiKey).get(`/v1/sources/${src.id}/history`, { limit: '100' })).body.data as { type: string }[];
      expect(history.filter((e) => e.type.startsWith('source.db_set'))).toEqual([]);
    }
    const fine = await runNow((await deploy(server.apiKey, SHAPE_SOURCE, { what: 'fine' })).id);
    expect(fine.ok).toBe(true);
    expect(fine.emitted).toHaveLength(1);
  });

  it('refuses db writes over SLUICE_MAX_DB_WRITE_BYTES_PER_RUN; the source keeps working', async () => {
    const src = await deploy(server.apiKey, DB_SOURCE, { plan: 'run-cap' });
    const run = await runNow(src.id);
    expect(run.ok).toBe(false);
    expect(run.error!.message).toMatch(/db\.set\("r19"\): this run would write 20\d\d\d bytes to the db, more than the 20000 bytes allowed per run \(SLUICE_MAX_DB_WRITE_BYTES_PER_RUN=20000\)/);
    const a = api(server.url, server.apiKey);
    expect((await a.put(`/v1/sources/${src.id}`, { configured_props: { plan: 'small' } })).status).toBe(200);
    const next = await runNow(src.id);
    expect(next.ok).toBe(true);
    // Writes recorded before the refused one stay, as for any thrown error: "n" was 1, now 2.
    expect(next.emitted[0].event.n).toBe(2);
  });

  it('refuses growth past SLUICE_MAX_DB_BYTES_PER_SOURCE; later runs succeed and see what was stored', async () => {
    const src = await deploy(server.apiKey, DB_SOURCE, { plan: 'grow' });
    for (let i = 1; i <= 3; i++) {
      const run = await runNow(src.id);
      expect(run.ok).toBe(true);
    }
    const refused = await runNow(src.id);
    expect(refused.ok).toBe(false);
    expect(refused.error!.message).toMatch(/db\.set\("g4"\): the source's db would hold \d+ bytes, more than the 50000 bytes allowed per source \(SLUICE_MAX_DB_BYTES_PER_SOURCE=50000\)/);
    const a = api(server.url, server.apiKey);
    expect((await a.put(`/v1/sources/${src.id}`, { configured_props: { plan: 'small' } })).status).toBe(200);
    const later = await runNow(src.id);
    expect(later.ok).toBe(true);
    expect(later.emitted[0].event).toEqual({ n: 5, keys: ['n', 'g1', 'g2', 'g3'] });
  });

  it('re-checks the per-source cap on the host: a tampered runtime cannot grow the db past it', async () => {
    const src = await deploy(server.apiKey, TAMPERING_DB_SOURCE);
    for (let i = 1; i <= 3; i++) expect((await runNow(src.id)).ok).toBe(true);
    const refused = await runNow(src.id);
    expect(refused.ok).toBe(false);
    expect(refused.error!.message).toMatch(/db\.set\("g4"\): the source's db would hold \d+ bytes, more than the 50000 bytes allowed per source \(SLUICE_MAX_DB_BYTES_PER_SOURCE=50000\)/);
    expect(refused.logs.at(-1)!.message).toMatch(/^OutputLimitError: .*SLUICE_MAX_DB_BYTES_PER_SOURCE=50000/);
    const history = (await api(server.url, server.apiKey).get(`/v1/sources/${src.id}/history`, { limit: '100' })).body.data as { type: string; data: { key?: string } }[];
    expect(history.filter((e) => e.type.startsWith('source.db_set')).map((e) => e.data.key)).toEqual(['n', 'g1', 'n', 'g2', 'n', 'g3', 'n']);
  });
});
