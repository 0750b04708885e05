import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startBenchServer } from './bench-server';

const CLI = join(resolve(__dirname, '..', '..'), 'dist/apps/cli/main.js');
const ACCOUNTS = 10;
/** Accounts that deploy the same code as `component_code`, for comparison. */
const CODE_ACCOUNTS = 9;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await fn();
  return [performance.now() - t0, out];
}

/**
 * What deploying a built-in by key costs: the first use of a key on a server (its file is
 * inlined, bundled and loaded once), later deploys in the same account (its saved copy is
 * reused), and first deploys in other accounts (saved from the registry's bundle: no bundling,
 * no sandbox load). Also the first registry listing of a fresh data directory, which installs
 * the feed poller's package.
 */
export async function benchRegistry(log: (s: string) => void): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-registry-'));
  const keys: string[] = [];
  for (let i = 0; i < ACCOUNTS + CODE_ACCOUNTS; i++) {
    const out = execFileSync(process.execPath, ['--no-warnings=ExperimentalWarning', CLI, 'create-account', '--name', `bench-${i}`], { env: { ...process.env, SLUICE_DATA_DIR: dataDir } });
    keys.push((JSON.parse(out.toString()) as { api_key: string }).api_key);
  }
  // A local feed for the feed poller's deploy hook.
  const feed = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/rss+xml' })
    .end('<rss version="2.0"><channel><title>b</title><item><guid>1</guid><title>one</title></item></channel></rss>'));
  await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
  const feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed`;
  const server = await startBenchServer({ SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' }, { dataDir });
  const deploy = async (key: string, body: unknown) => {
    const r = await fetch(`${server.url}/v1/sources`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (r.status !== 200) throw new Error(`deploy: ${r.status} ${await r.text()}`);
  };
  try {
    const [first] = await timed(() => deploy(keys[0], { key: 'sluice-http-webhook' }));
    log(`  first deploy of sluice-http-webhook on the server (inline, bundle, load, save): ${first.toFixed(1)} ms`);
    const again: number[] = [];
    for (let i = 0; i < 15; i++) again.push((await timed(() => deploy(keys[0], { key: 'sluice-http-webhook' })))[0]);
    log(`  deploy of the same key again in that account (median of 15): ${median(again).toFixed(1)} ms`);
    const others: number[] = [];
    for (const k of keys.slice(1, ACCOUNTS)) others.push((await timed(() => deploy(k, { key: 'sluice-http-webhook' })))[0]);
    log(`  first deploy of the key in each of ${others.length} other accounts (median): ${median(others).toFixed(1)} ms`);
    const shown = await fetch(`${server.url}/v1/components/registry/sluice-http-webhook`, { headers: { authorization: `Bearer ${keys[0]}` } });
    const code = ((await shown.json()) as { data: { code: string } }).data.code;
    const asCode: number[] = [];
    for (const k of keys.slice(ACCOUNTS)) asCode.push((await timed(() => deploy(k, { component_code: code })))[0]);
    log(`  for comparison, the same code as component_code, first deploy in each of ${asCode.length} accounts (bundled and loaded each time, median): ${median(asCode).toFixed(1)} ms`);
    const [listing] = await timed(async () => {
      const r = await fetch(`${server.url}/v1/components/registry`, { headers: { authorization: `Bearer ${keys[0]}` } });
      if (r.status !== 200) throw new Error(`registry: ${r.status}`);
      return r.json();
    });
    log(`  first GET /v1/components/registry (loads every built-in; installs fast-xml-parser into the fresh data dir): ${listing.toFixed(0)} ms`);
    const [listingAgain] = await timed(() => fetch(`${server.url}/v1/components/registry`, { headers: { authorization: `Bearer ${keys[0]}` } }).then((r) => r.json()));
    log(`  GET /v1/components/registry again: ${listingAgain.toFixed(1)} ms`);

    // A built-in with a package: the bundle (fast-xml-parser inlined) is made once, not per account.
    const feedProps = { url: feedUrl, historyCount: 0 };
    const feedByKey: number[] = [];
    for (const k of keys.slice(0, ACCOUNTS)) feedByKey.push((await timed(() => deploy(k, { key: 'sluice-feed-poller', configured_props: feedProps })))[0]);
    log(`  first deploy of sluice-feed-poller (imports fast-xml-parser) in each of ${feedByKey.length} accounts (median; its fetch at deploy included): ${median(feedByKey).toFixed(1)} ms`);
    const feedShown = await fetch(`${server.url}/v1/components/registry/sluice-feed-poller`, { headers: { authorization: `Bearer ${keys[0]}` } });
    const feedCode = ((await feedShown.json()) as { data: { code: string } }).data.code;
    const feedAsCode: number[] = [];
    for (const k of keys.slice(ACCOUNTS)) feedAsCode.push((await timed(() => deploy(k, { component_code: feedCode, configured_props: feedProps })))[0]);
    log(`  for comparison, its code as component_code in each of ${feedAsCode.length} accounts (bundled with the package and loaded each time, median): ${median(feedAsCode).toFixed(1)} ms`);
  } finally {
    await server.stop();
    await new Promise((r) => feed.close(r));
  }
}
