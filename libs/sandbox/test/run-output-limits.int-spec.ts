import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

const LIMITS = {
  maxEmits: 5,
  maxEmitBytes: 200,
  maxRunEmitBytes: 500,
  maxDbWriteBytesPerRun: 300,
  maxDbBytesPerSource: 1000,
  maxDbKeyChars: 16,
  maxEmitIdChars: 8,
  maxEmitNameChars: 8,
  maxEmitSummaryChars: 20,
};

describe('SandboxSupervisor: caps on what one run produces', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, outputLimits: LIMITS });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  async function run(code: string, extra: Parameters<typeof invocation>[1] = {}) {
    return sandbox.invoke(invocation(await component(code), extra));
  }

  it('refuses the emit past the count at the call: the run fails naming the limit, the earlier emits stay', async () => {
    const result = await run('export default { run() { for (let i = 0; i < 8; i++) this.$emit({ i }); } }');
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ name: 'RangeError', kind: 'user' });
    expect(result.error!.message).toContain('at most 5 events (SLUICE_MAX_EMITS_PER_RUN=5)');
    expect(result.emits.map((e) => e.event)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
    expect(result.logs.at(-1)!.message).toContain('SLUICE_MAX_EMITS_PER_RUN=5');
  });

  it('lets a component catch the refusal and finish', async () => {
    const result = await run(`export default { run() {
      let refused = "";
      for (let i = 0; i < 8; i++) { try { this.$emit(i); } catch (e) { refused = e.name; } }
      return refused;
    } }`);
    expect(result).toMatchObject({ ok: true, returnValue: 'RangeError' });
    expect(result.emits).toHaveLength(5);
  });

  it('refuses an event over the per-event bytes and a run over the total bytes', async () => {
    const big = await run('export default { run() { this.$emit("a".repeat(50)); this.$emit("b".repeat(300)); } }');
    expect(big.error!.message).toMatch(/the event is 302 bytes as JSON, more than the 200 bytes allowed per event \(SLUICE_MAX_EMIT_BYTES=200\)/);
    expect(big.emits).toHaveLength(1);
    const total = await run('export default { run() { for (let i = 0; i < 4; i++) this.$emit("c".repeat(148)); } }');
    expect(total.error!.message).toMatch(/would total 600 bytes as JSON, more than the 500 bytes allowed per run \(SLUICE_MAX_RUN_EMIT_BYTES=500\)/);
    expect(total.emits).toHaveLength(3);
  });

  it('refuses over-long meta id, name and summary', async () => {
    for (const [field, meta] of [['id', '{ id: "123456789" }'], ['name', '{ name: "channel-long" }'], ['summary', '{ summary: "s".repeat(21) }']]) {
      const result = await run(`export default { run() { this.$emit(1, ${meta}); } }`);
      expect(result.ok).toBe(false);
      expect(result.error!.message).toMatch(new RegExp(`meta\\.${field} is \\d+ characters long, more than the \\d+ allowed`));
      expect(result.emits).toEqual([]);
    }
  });

  it('refuses a long db key, writes over the per-run bytes, and growth past the per-source bytes (shrinking stays allowed)', async () => {
    const db = { dbProps: ['db'] };
    const key = await run('export default { props: { db: "$.service.db" }, run() { this.db.set("k".repeat(17), 1); } }', db);
    expect(key.error!.message).toMatch(/the key is 17 characters long, more than the 16 allowed/);
    expect(key.dbWrites).toEqual([]);

    const perRun = await run('export default { props: { db: "$.service.db" }, run() { for (let i = 0; i < 5; i++) this.db.set("k" + i, "v".repeat(98)); } }', db);
    expect(perRun.error!.message).toMatch(/this run would write 306 bytes to the db, more than the 300 bytes allowed per run \(SLUICE_MAX_DB_WRITE_BYTES_PER_RUN=300\)/);
    expect(perRun.dbWrites.map((w) => w.key)).toEqual(['k0', 'k1']);

    // The source already holds 900 bytes: "a" (1 + 99) plus others the host counted.
    const snapshot = { ...db, db: { a: 'x'.repeat(97) }, dbBytes: 900 };
    const grow = await run('export default { props: { db: "$.service.db" }, run() { this.db.set("b", "y".repeat(98)); } }', snapshot);
    expect(grow.error!.message).toMatch(/the source's db would hold 1001 bytes, more than the 1000 bytes allowed per source \(SLUICE_MAX_DB_BYTES_PER_SOURCE=1000\)/);
    const shrink = await run('export default { props: { db: "$.service.db" }, run() { this.db.set("a", 1); this.db.set("b", "y".repeat(98)); } }', snapshot);
    expect(shrink.ok).toBe(true);
    expect(shrink.dbWrites.map((w) => w.key)).toEqual(['a', 'b']);
  });

  it('cuts a result from a tampered runtime at the caps on the host side', async () => {
    // The runtime serialises its records with Array.prototype.join; a component can replace it
    // and so report emits and writes the guest-side checks never saw.
    const result = await run(`export default { props: { db: "$.service.db" }, run() {
      this.$emit({ n: -1 });
      const realJoin = Array.prototype.join;
      let calls = 0;
      Array.prototype.join = function (sep) {
        calls++;
        if (calls === 1) return realJoin.call(Array.from({ length: 50 }, (_, n) => JSON.stringify({ event: { n }, meta: {} })), ",");
        if (calls === 2) return realJoin.call(Array.from({ length: 50 }, (_, n) => JSON.stringify({ key: "k" + n, value: "v".repeat(90) })), ",");
        return realJoin.call(this, sep);
      };
    } }`, { dbProps: ['db'] });
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ name: 'OutputLimitError', kind: 'invalid' });
    expect(result.error!.message).toContain('SLUICE_MAX_EMITS_PER_RUN=5');
    expect(result.emits.map((e) => e.event)).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    expect(result.dbWrites.map((w) => w.key)).toEqual(['k0', 'k1', 'k2']);
    expect(result.logs.at(-1)!.message).toContain('OutputLimitError');
  });
});
