import { execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchServer } from './bench-server';
import { BenchReceiver, sourcePipeline } from './e2e.bench';
import { InstructionCounts, parseCallgrind } from './probe/callgrind-file';

function shortObject(path: string): string {
  if (path === '???') return 'JIT and unknown';
  const base = path.split('/').pop() ?? path;
  if (base === 'node') return 'node (V8, Node, libuv)';
  return base.replace(/\.so(\.[\d.]+)?$/, '');
}

function callgrindControl(args: string[]): void {
  execFileSync('callgrind_control', args, { stdio: 'ignore', timeout: 120_000 });
}

/**
 * The files of the newest dump callgrind wrote for `pid` in `dir`, one per thread
 * (`cg.<pid>.<part>-<thread>`), by thread number (1 is the main thread).
 */
function newestDump(dir: string, pid: number): Map<number, string> {
  const parts = new Map<number, Map<number, string>>();
  for (const f of readdirSync(dir)) {
    const m = new RegExp(`^cg\\.${pid}\\.(\\d+)-(\\d+)$`).exec(f);
    if (!m) continue;
    const part = Number(m[1]);
    if (!parts.has(part)) parts.set(part, new Map());
    parts.get(part)!.set(Number(m[2]), join(dir, f));
  }
  if (parts.size === 0) throw new Error(`callgrind wrote no dump for ${pid}`);
  return parts.get(Math.max(...parts.keys()))!;
}

/**
 * Native entry points whose inclusive count is steadier than a thread's total (which moves with
 * when V8's optimised code arrives): a change to what they are given shows in them first.
 */
const INCLUSIVE_OF: [string, RegExp, 'largest' | 'sum'][] = [
  ['JSON.parse', /:v8::internal::Builtin_JsonParse\(/, 'largest'],
  ['JSON.stringify', /:v8::internal::Builtin_JsonStringify\(/, 'largest'],
  ['SQLite statements', /:sqlite3_step \[/, 'largest'],
  // The same with what the binding layer does around them: better-sqlite3's `run()`, or lean-statements' (`writeStatements`).
  ['statement calls', /:(Statement::JS_run\(|run_stmt \[)/, 'largest'],
  ['GC', /:v8::internal::Heap::CollectGarbage\(/, 'largest'],
  // The digests per delivery (its id's SHA-1, its signature's HMAC), through node:crypto or lean-digest:
  // each call's entry points from JavaScript, added up (an HMAC through node:crypto is four of them).
  ['hashes', /:(node::crypto::Hash::(OneShotDigest|HashInit|HashUpdate|HashDigest)\(v8::FunctionCallbackInfo|node::crypto::Hash::New\(|sha1_into \[)/, 'sum'],
  ['HMACs', /:(node::crypto::Hmac::(New|HmacInit|HmacUpdate|HmacDigest)\(v8::FunctionCallbackInfo|hmac_sha256_base64 \[)/, 'sum'],
];

/** Inclusive instructions of {@link INCLUSIVE_OF} in one thread's file (`callgrind_annotate --inclusive=yes`); 0 when absent. */
function inclusiveCounts(file: string): Map<string, number> {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 120_000 });
  const counts = new Map<string, number>(INCLUSIVE_OF.map(([label]) => [label, 0]));
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+) \(/.exec(line);
    if (!m) continue;
    for (const [label, pattern, combine] of INCLUSIVE_OF) {
      if (!pattern.test(line)) continue;
      const ir = Number(m[1].replaceAll(',', ''));
      // A recursive function is listed once per depth (`name'2`): the outermost holds the most.
      if (combine === 'largest') counts.set(label, Math.max(counts.get(label)!, ir));
      else if (!/'\d+ \[/.test(line)) counts.set(label, counts.get(label)! + ir);
    }
  }
  return counts;
}

/** Between warm-up events (ms): they need not be alone, only many. */
const WARMUP_GAP_MS = 5;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Instructions per delivered event, counted by callgrind in the server and its sandbox worker
 * (`BENCH_ONLY=instructions`). Wall-clock A/Bs on these shared machines swing by 10-30% between
 * runs; an instruction count does not follow what else the machine does (how far it still moves
 * between runs: below). What it does not see: the kernel
 * (syscalls, wake-ups, the disk), and cache misses, which make a cold event at everyday rates cost
 * several times a warm one at saturation.
 *
 * The server runs under `valgrind --tool=callgrind --trace-children=yes --separate-threads=yes`
 * (its sandbox worker is counted too; esbuild's service is skipped), with the instrumentation off
 * (about 4 times slower) for `BENCH_CG_WARMUP` events (default 2,000, 5 ms apart) that warm the
 * JIT, then on (about 50 times slower): the request linger is raised to 100 ms so a request still
 * shares its commit with its run's record as it does natively, and the fsync stays on the event
 * loop, where it runs at everyday rates. After 5 more events the counters are zeroed and
 * `BENCH_CG_EVENTS` (default 200) are counted, sent one at a time to the e2e bench's pipeline
 * (HTTP source, emit, signed delivery to a receiver on loopback), each after the previous one was
 * delivered and `BENCH_CG_GAP_MS` (default 400) later, so each event is alone, as at 10 events/s:
 * its request and run commit together, its outcome commits on its own timer. Printed per event:
 * each process's main thread, by object file (JIT code has no object), and all its threads. The
 * main threads are the figure to compare: V8's helper threads (concurrent marking, TurboFan) follow
 * heuristics driven by the wall clock, which valgrind slows. Runs of the same build differ by
 * about 5% either way in the server's main thread (when V8's optimised code and collections
 * arrive still depends on time) and 2% in the worker's. `BENCH_CG_ROOTS=<dir A>,<dir B>` counts
 * two built checkouts one after the other and prints B / A (default: this checkout); a dir may
 * carry settings of the server's environment, `<dir>;NAME=value`, as in `BENCH_AB`. Also
 * printed, per main thread: what a few native entry points cost with all they call (JSON.parse,
 * JSON.stringify, SQLite's statements, GC, the deliveries' hashes and HMACs; `callgrind_annotate --inclusive=yes`),
 * steadier than the totals, so a change to what they are given shows there first;
 * `BENCH_CG_KEEP=1` keeps callgrind's files for `callgrind_annotate`. About 2-3 minutes per build.
 */
export async function benchInstructions(log: (s: string) => void): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    log('  skipped: valgrind is not installed');
    return;
  }
  const warmup = Number(process.env.BENCH_CG_WARMUP ?? 2000);
  const events = Number(process.env.BENCH_CG_EVENTS ?? 200);
  const gapMs = Number(process.env.BENCH_CG_GAP_MS ?? 400);
  const roots = (process.env.BENCH_CG_ROOTS ?? '').split(',').filter(Boolean);
  const results: (Counts & { root: string })[] = [];
  for (const root of roots.length ? roots : [undefined]) {
    const counts = await countOneBuild(root, warmup, events, gapMs, log);
    results.push({ root: root ?? 'this checkout', ...counts });
  }
  if (results.length === 2) {
    const [a, b] = results;
    const ratio = (x: number, y: number) => (y / x).toFixed(3);
    log(`  B / A (A ${a.root}, B ${b.root}), main threads: server ${ratio(a.server, b.server)}, worker ${ratio(a.worker, b.worker)}, both ${ratio(a.server + a.worker, b.server + b.worker)}; all threads: both ${ratio(a.serverAll + a.workerAll, b.serverAll + b.workerAll)}`);
    const inside = (x: Map<string, number>, y: Map<string, number>) => [...x].map(([label, ir]) => `${label} ${ir > 0 ? ratio(ir, y.get(label)!) : 'n/a'}`).join(', ');
    log(`  B / A inside the main threads: server ${inside(a.serverInclusive, b.serverInclusive)}; worker ${inside(a.workerInclusive, b.workerInclusive)}`);
  }
}

/** Instructions per event: the main threads', and all threads' (V8's compiler and GC helpers too). */
interface Counts {
  server: number;
  worker: number;
  serverAll: number;
  workerAll: number;
  /** Inclusive counts of {@link INCLUSIVE_OF} in each main thread (all events, not per event). */
  serverInclusive: Map<string, number>;
  workerInclusive: Map<string, number>;
}

async function countOneBuild(rootSpec: string | undefined, warmup: number, events: number, gapMs: number, log: (s: string) => void): Promise<Counts> {
  // `<dir>;NAME=value;...`: the server's environment settings of that build, as in BENCH_AB.
  const [root, ...settings]: (string | undefined)[] = rootSpec === undefined ? [undefined] : rootSpec.split(';');
  const env = Object.fromEntries(settings.map((kv = '') => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const server = await startBenchServer(
    { SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_FSYNC_PLACEMENT: 'loop', SLUICE_REQUEST_LINGER_MS: '100', ...env },
    {
      root,
      wrapper: ['valgrind', '-q', '--tool=callgrind', '--trace-children=yes', '--trace-children-skip=*esbuild*', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'cg.%p')}`],
    },
  );
  let agent: Agent | undefined;
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'bench', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    const serverPid = server.proc.pid!;
    let n = 0;
    // A connection of its own, as a webhook sender's: `fetch` would reuse the keep-alive connection
    // of the API calls above, which Node's server holds since their first request (the lean server
    // lets a connection go for good), so every event would take Node's parser and fast path.
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const endpoint = new URL(endpointUrl);
    const post = (body: string) => new Promise<number>((resolve, reject) => {
      const req = request({ host: endpoint.hostname, port: endpoint.port, path: endpoint.pathname, method: 'POST', agent: agent!, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
    // BENCH_CG_FETCH=1: the events go with fetch, over the keep-alive connection of the API calls
    // above, as an SDK's or a reverse proxy's pooled connection carries both.
    const viaFetch = process.env.BENCH_CG_FETCH === '1';
    const one = async (gap = gapMs) => {
      const i = n++;
      const body = JSON.stringify({ n: i, t: Date.now() });
      const status = viaFetch
        ? await fetch(endpointUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (res) => (await res.arrayBuffer(), res.status))
        : await post(body);
      if (status !== 200) throw new Error(`request ${i} answered ${status}`);
      for (let waited = 0; !receiver.firstAt.has(i); waited += 5) {
        if (waited > 120_000) throw new Error(`event ${i} was not delivered within 120 s`);
        await sleep(5);
      }
      await sleep(gap);
    };
    for (let i = 0; i < warmup; i++) await one(WARMUP_GAP_MS);
    const workers = readFileSync(`/proc/${serverPid}/task/${serverPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    if (workers.length !== 1) throw new Error(`expected one sandbox worker, found ${workers.length}`);
    const pids = [serverPid, workers[0]];
    for (const pid of pids) callgrindControl(['--instr=on', String(pid)]);
    // A few events with the instrumentation on before counting (its first translations).
    for (let i = 0; i < 5; i++) await one();
    for (const pid of pids) callgrindControl(['--zero', String(pid)]);
    for (let i = 0; i < events; i++) await one();
    for (const pid of pids) callgrindControl(['--dump', String(pid)]);
    const [serverThreads, workerThreads] = pids.map((pid) => {
      const threads = newestDump(dir, pid);
      const main = parseCallgrind(readFileSync(threads.get(1)!, 'utf8'));
      let all = main.total;
      for (const [thread, file] of threads) if (thread !== 1) all += parseCallgrind(readFileSync(file, 'utf8')).total;
      return { main, all, inclusive: inclusiveCounts(threads.get(1)!) };
    });
    const line = (what: string, t: { main: InstructionCounts; all: number; inclusive: Map<string, number> }) => {
      const parts = [...t.main.byObject].sort((a, b) => b[1] - a[1]).slice(0, 4)
        .map(([o, ir]) => `${shortObject(o)} ${((100 * ir) / t.main.total).toFixed(0)}%`);
      const inclusive = [...t.inclusive].map(([label, ir]) => `${label} ${(ir / events / 1e3).toFixed(1)}`).join(', ');
      return `  ${what.padEnd(7)} main thread ${(t.main.total / events / 1e6).toFixed(3)} M instructions per event (${parts.join(', ')}); all threads ${(t.all / events / 1e6).toFixed(3)} M\n` +
        `          main thread, thousand instructions per event inside: ${inclusive}`;
    };
    log(`  ${root ?? 'this checkout'}: ${events} events after ${warmup}, each alone`);
    log(line('server', serverThreads));
    log(line('worker', workerThreads));
    return {
      server: serverThreads.main.total / events, worker: workerThreads.main.total / events, serverAll: serverThreads.all / events, workerAll: workerThreads.all / events,
      serverInclusive: serverThreads.inclusive, workerInclusive: workerThreads.inclusive,
    };
  } finally {
    agent?.destroy();
    await server.stop();
    await receiver.stop();
    if (process.env.BENCH_CG_KEEP) log(`  callgrind's files are kept in ${dir} (callgrind_annotate <file>)`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
