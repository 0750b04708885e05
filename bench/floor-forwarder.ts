import { closeSync, fsync, openSync, rmSync, write } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The "floor" of `npm run bench` (issue 10): a stateless forwarder that POSTs every JSON body it
 * receives to one webhook receiver and stores nothing, signs nothing and never retries. It runs
 * as its own process (`node dist/bench/floor-forwarder.js`) so the bench measures its CPU and RSS
 * exactly as it measures Sluice's.
 *
 * Env: `FLOOR_TARGET` (receiver URL), `FLOOR_CONCURRENCY` (sockets to the receiver, default 64 as
 * Sluice's `SLUICE_DELIVERY_CONCURRENCY`), `FLOOR_ACK`:
 * - `sent` (default): answer 200 once the forward is written to the receiver's socket. This is
 *   the counterpart of Sluice, whose 2xx does not wait for the receiver either (it waits for the
 *   fsync of the log, which the floor has no counterpart for); the forwards in flight are bounded
 *   by the socket pool and the answer waits for a socket, so the floor cannot run away from its
 *   receiver under a closed loop.
 * - `received`: answer once the receiver answered. Not "fairer" for at-least-once: a forwarder
 *   without a log loses what it holds when it dies whether it answered early or late, so this
 *   only adds the receiver's latency to the caller's and bounds the closed loop end to end (it
 *   did not lower the floor's saturation rate when tried, so `sent` does not flatter Sluice).
 * A POST to `/durable` is not forwarded: it is answered once its body is written to a file and
 * the file fsynced, the least any server that acknowledges durably does per request (the floor
 * of a custom-response round trip, which Sluice answers after its request's fsync).
 * Prints `listening on http://127.0.0.1:<port>` once it accepts requests.
 */
const target = new URL(process.env.FLOOR_TARGET ?? 'http://127.0.0.1:9/hook');
const ackAfter = process.env.FLOOR_ACK === 'received' ? 'received' : 'sent';
const agent = new Agent({ keepAlive: true, maxSockets: Number(process.env.FLOOR_CONCURRENCY ?? 64) });

const durableFile = join(tmpdir(), `sluice-floor-${process.pid}.log`);
const durableFd = openSync(durableFile, 'a');

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.url === '/durable') {
      write(durableFd, body, (err) => {
        if (err) return res.writeHead(500).end();
        fsync(durableFd, (e) => res.writeHead(e ? 500 : 200, { 'content-type': 'application/json' }).end('{"ok":true}'));
      });
      return;
    }
    let answered = false;
    const answer = (status: number) => {
      if (answered) return;
      answered = true;
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
    const fwd = request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': body.length },
    }, (r) => {
      r.resume();
      r.on('end', () => answer(200));
    });
    fwd.on('error', () => answer(502));
    fwd.end(body, () => {
      if (ackAfter === 'sent') answer(200);
    });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`floor forwarder (ack after ${ackAfter}) listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  agent.destroy();
  closeSync(durableFd);
  rmSync(durableFile, { force: true });
  process.exit(0);
});
