import { fork } from 'node:child_process';
import { closeSync, fdatasync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FsyncPlacement } from '../libs/event-store/src/fsync-placement';

/**
 * The "relay floor" of `npm run bench` (issue 10): the least any server with Sluice's shape does
 * per event, with none of Sluice's own work. Per request it
 * - appends the body to a file and answers 200 once an fsync covering it has ended (one fsync at
 *   a time; the requests that arrive meanwhile share the next one; it runs on the event loop or
 *   on the libuv pool by Sluice's own rule, `FsyncPlacement` in `auto`), and
 * - sends the body to a child process over Node's IPC channel, which passes it through an
 *   isolated-vm isolate and back (`relay-floor-child.ts`), then POSTs what came back to the
 *   receiver, as the floor forwarder does.
 * Bodies of one event-loop turn go to the child as one message and through the isolate in one
 * entry, as Sluice batches invocations. So it pays the hops Sluice's design pays (a request, a
 * round trip to a sandbox process and its isolate thread, an fsync, a delivery), and nothing for
 * a log, read models, signatures, retries or component code. Sluice's CPU per event over this
 * one is what its own code costs; this one's over the floor forwarder's is what the design costs.
 *
 * A POST to `/respond` is not forwarded: it is answered once its body is durable and back from the
 * isolate, the least a custom-response source's round trip costs in this shape.
 *
 * Env: `FLOOR_TARGET` (receiver URL), `FLOOR_CONCURRENCY` (sockets to the receiver, default 64).
 * Prints `listening on http://127.0.0.1:<port>` once it accepts requests.
 */
const target = new URL(process.env.FLOOR_TARGET ?? 'http://127.0.0.1:9/hook');
const agent = new Agent({ keepAlive: true, maxSockets: Number(process.env.FLOOR_CONCURRENCY ?? 64) });

const logFile = join(tmpdir(), `sluice-relay-floor-${process.pid}.log`);
const logFd = openSync(logFile, 'a');
const placement = new FsyncPlacement('auto');
/** This turn's bodies and their answers, written together at the turn's end (as a group commit). */
let unwritten: Buffer[] = [];
let unwrittenAnswers: (() => void)[] = [];
/** Answers whose bodies are written, waiting for the next fsync. */
let waiting: (() => void)[] = [];
let syncing = false;

function synced(answers: (() => void)[]): void {
  syncing = false;
  for (const answer of answers) answer();
  if (waiting.length > 0) startSync();
}

function startSync(): void {
  const answers = waiting;
  waiting = [];
  syncing = true;
  if (placement.next()) {
    const t0 = performance.now();
    fdatasyncSync(logFd);
    placement.tookOnLoop(performance.now() - t0);
    // Answered from the next turn, as Sluice answers appends synced on the loop.
    setImmediate(() => synced(answers));
  } else {
    fdatasync(logFd, () => synced(answers));
  }
}

function writeTurn(): void {
  writeSync(logFd, unwritten.length === 1 ? unwritten[0] : Buffer.concat(unwritten));
  waiting.push(...unwrittenAnswers);
  unwritten = [];
  unwrittenAnswers = [];
  if (!syncing) startSync();
}

/** Appends `body` at the turn's end and calls `answer` once an fsync after that write has ended. */
function durably(body: Buffer, answer: () => void): void {
  unwritten.push(body);
  unwrittenAnswers.push(answer);
  if (unwritten.length === 1) setImmediate(writeTurn);
}

const child = fork(join(__dirname, 'relay-floor-child.js'), [], { execArgv: ['--no-node-snapshot'], serialization: 'json' });
let nextBatch = 1;
let batch: string[] = [];
let batchDone: ((body: string) => void)[] = [];
/** What to do with each body of a batch in flight once the child sends it back, by batch id. */
const inFlight = new Map<number, ((body: string) => void)[]>();
child.on('message', (msg: { id: number; bodies?: string; error?: string }) => {
  const done = inFlight.get(msg.id);
  inFlight.delete(msg.id);
  if (msg.bodies === undefined || !done) {
    console.error(`relay floor: the child failed a batch: ${msg.error}`);
    return;
  }
  (JSON.parse(msg.bodies) as string[]).forEach((body, i) => done[i](body));
});

/** Sends `body` through the child and its isolate with this turn's others; `done` gets it back. */
function relay(body: Buffer, done: (body: string) => void): void {
  batch.push(body.toString('utf8'));
  batchDone.push(done);
  if (batch.length > 1) return;
  setImmediate(() => {
    const id = nextBatch++;
    inFlight.set(id, batchDone);
    child.send({ id, bodies: JSON.stringify(batch) });
    batch = [];
    batchDone = [];
  });
}

function forward(body: string): void {
  const fwd = request({
    host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  }, (r) => r.resume());
  fwd.on('error', () => undefined);
  fwd.end(body);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (req.url === '/respond') {
      // The counterpart of a custom-response source: answered once the body is durable and back
      // from the isolate, whichever comes last.
      let left = 2;
      const one = () => {
        if (--left === 0) answer();
      };
      relay(body, one);
      durably(body, one);
      return;
    }
    relay(body, forward);
    durably(body, answer);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`relay floor listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  agent.destroy();
  child.kill();
  closeSync(logFd);
  rmSync(logFile, { force: true });
  process.exit(0);
});
