// Measures POST /v1/actions/run against the built server (run `node scripts/build.mjs` first):
// 1,000 sequential runs of the transform-records fixture by component id (p50 / p99 latency),
// then 4,000 runs from 16 concurrent clients (runs per second). Printed, not asserted.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-actions-'));
const key = 'sk_bench_actions_key_0123456789';
const { SERVER_NODE_FLAGS } = await import(join(root, 'dist/src/server-node-flags.js'));
const proc = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', ...SERVER_NODE_FLAGS, join(root, 'dist/src/main.js')], {
  env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SLUICE_DATA_DIR: dataDir, SLUICE_API_KEY: key, SLUICE_SANDBOX_WORKERS: '2' }, stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
const url = await new Promise((res) => proc.stdout.on('data', (d) => { out += d; const m = /listening on (http:\/\/[^\s]+)/.exec(out); if (m) res(m[1]); }));
const post = async (body) => { const r = await fetch(`${url}/v1/actions/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }); return r.json(); };
const code = readFileSync(join(root, 'test/fixtures/actions/transform-records.mjs'), 'utf8');
const first = await post({ component_code: code, configured_props: { records: [{ name: 'a' }], field: 'name' } });
const id = first.data.component_id;
const body = { component_id: id, configured_props: { records: [{ name: 'a' }, { name: 'b' }], field: 'name' } };
for (let i = 0; i < 200; i++) await post(body);
const lat = [];
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < 1000; i++) { const s = performance.now(); await post(body); lat.push(performance.now() - s); }
const seq = performance.now() - t0;
lat.sort((a, b) => a - b);
const t1 = performance.now();
await Promise.all(Array.from({ length: 16 }, async () => { for (let i = 0; i < 250; i++) await post(body); }));
const par = performance.now() - t1;
console.log(JSON.stringify({ sequential: { runs: 1000, p50_ms: lat[500].toFixed(2), p99_ms: lat[990].toFixed(2) }, concurrent16: { runs: 4000, runs_per_s: Math.round(4000 / (par / 1000)) } }));
proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));
rmSync(dataDir, { recursive: true, force: true });
