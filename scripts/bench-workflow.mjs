// Issue 8's workflow benchmark against the built server (run `node scripts/build.mjs` first):
// a three-step workflow (transform, transform, $.send.emit) triggered over HTTP, its emit
// delivered to a local webhook. Prints runs per second at saturation (webhook receipts per
// second), server CPU per run (server and sandbox workers, from /proc), and p50 / p99 from request
// to the webhook's receipt at a paced 200 requests per second. Printed, not asserted.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-workflow-'));
const key = 'sk_bench_workflow_key_0123456789';
const SATURATION_RUNS = Number(process.env.BENCH_RUNS ?? 3000);
const PACED_RUNS = Number(process.env.BENCH_PACED_RUNS ?? 1000);

const received = new Map();
const hook = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    try { received.set(JSON.parse(body).i, performance.now()); } catch { /* not ours */ }
    res.writeHead(200).end('ok');
  });
});
await new Promise((r) => hook.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${hook.address().port}/hook`;

const proc = spawn(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : []), '--no-warnings=ExperimentalWarning', join(root, 'dist/src/main.js')], {
  env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SLUICE_DATA_DIR: dataDir, SLUICE_API_KEY: key, SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_WORKERS: '2' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let out = '';
const url = await new Promise((res) => proc.stdout.on('data', (d) => { out += d; const m = /listening on (http:\/\/[^\s]+)/.exec(out); if (m) res(m[1]); }));
const api = async (method, path, body) => {
  const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
};
const action = (name, props, run) => `export default { name: "${name}", key: "bench-${name}", version: "0.1.0", type: "action", props: ${props}, async run({ $, steps }) { ${run} } };`;
const wf = (await api('POST', '/v1/workflows', {
  name: 'bench', trigger: { type: 'http' }, settings: { concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1) },
  steps: [
    { name: 'parse', component_code: action('parse', '{ body: { type: "any" } }', 'const b = this.body; $.export("i", b.i); return { i: b.i, words: String(b.text).split(" ").length };'), configured_props: { body: '{{steps.trigger.event.body}}' } },
    { name: 'shape', component_code: action('shape', '{ parsed: { type: "any" } }', 'return { i: this.parsed.i, words: this.parsed.words, at: Date.now() };'), configured_props: { parsed: '{{steps.parse.$return_value}}' } },
    { name: 'emit', component_code: action('emit', '{ out: { type: "any" } }', '$.send.emit({ raw_event: this.out, name: "out" });'), configured_props: { out: '{{steps.shape.$return_value}}' } },
  ],
})).data;
const wh = (await api('POST', '/v1/webhooks', { url: hookUrl, name: 'bench' })).data;
await api('POST', '/v1/subscriptions', { emitter_id: wf.id, listener_id: wh.id, event_name: 'out' });
const endpoint = wf.trigger.endpoint_url.replace(/^.*\/e\//, `${url}/e/`);
const trigger = (i) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i, text: 'the quick brown fox' }) }).then((r) => r.arrayBuffer());
const waitFor = async (n) => { while (received.size < n) await new Promise((r) => setTimeout(r, 5)); };

/** CPU seconds of the server and its sandbox workers. */
const cpuSeconds = () => {
  const pids = [proc.pid, ...execFileSync('pgrep', ['-P', String(proc.pid)]).toString().trim().split('\n').filter(Boolean).map(Number)];
  let ticks = 0;
  for (const pid of pids) {
    try { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); ticks += Number(f[11]) + Number(f[12]); } catch { /* gone */ }
  }
  return ticks / 100;
};

for (let i = 0; i < 200; i++) await trigger(-1 - i); // warm-up
received.clear();
let next = 0;
const cpu0 = cpuSeconds();
const t0 = performance.now();
await Promise.all(Array.from({ length: 32 }, async () => { while (next < SATURATION_RUNS) await trigger(next++); }));
await waitFor(SATURATION_RUNS);
const satSeconds = (performance.now() - t0) / 1000;
const cpuPerRun = ((cpuSeconds() - cpu0) / SATURATION_RUNS) * 1000;

received.clear();
const sentAt = new Map();
const paced = performance.now();
const pending = [];
for (let i = 0; i < PACED_RUNS; i++) {
  const due = paced + i * 5;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  // Keys apart from the saturation phase's, whose late receipts must not count here.
  sentAt.set(1e6 + i, performance.now());
  pending.push(trigger(1e6 + i));
}
await Promise.all(pending);
while ([...sentAt.keys()].some((k) => !received.has(k))) await new Promise((r) => setTimeout(r, 5));
const lat = [...sentAt].map(([i, s]) => received.get(i) - s).sort((a, b) => a - b);
console.log(JSON.stringify({
  saturation: { runs: SATURATION_RUNS, runs_per_s: Math.round(SATURATION_RUNS / satSeconds), cpu_ms_per_run: cpuPerRun.toFixed(2), cpu_ms_per_step: (cpuPerRun / 3).toFixed(2) },
  paced_200_per_s: { runs: PACED_RUNS, p50_ms: lat[Math.floor(lat.length * 0.5)].toFixed(1), p99_ms: lat[Math.floor(lat.length * 0.99)].toFixed(1) },
}));
proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));
hook.close();
rmSync(dataDir, { recursive: true, force: true });
