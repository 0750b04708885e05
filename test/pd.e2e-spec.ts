import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { pdEnv, runPd, spawnPd } from './support/pd-cli';

const fixture = (name: string) => join(__dirname, 'fixtures', 'pd', name);

/** A port nothing listens on: bound, read, closed. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('pd, the command-line client, against a real server', () => {
  let server: SluiceProcess;
  let env: NodeJS.ProcessEnv;
  const pd = (...args: string[]) => runPd(args, env);
  const pdJson = async (...args: string[]) => {
    const r = await runPd([...args, '--json'], env);
    if (r.code !== 0) throw new Error(`pd ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const rest = () => api(server.url, server.apiKey);

  beforeAll(async () => {
    server = await startSluice();
    env = pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('runs the spec 4.5 workflow with pd only: deploy, list, create a webhook, subscribe; an emitted event reaches the webhook', async () => {
    const receiver = new WebhookReceiver();
    await receiver.start();
    try {
      const deployed = await pd('deploy', fixture('greeter.mjs'), '--name', 'Front Door', '--prop', 'greeting=hi ', '--prop', 'times=2');
      expect(deployed.code).toBe(0);
      expect(deployed.stdout).toMatch(/^id: +dc_/m);
      // 1. The source id, from the list.
      const sources = await pdJson('list', 'sources');
      const source = sources.find((s: { name: string }) => s.name === 'Front Door');
      expect(source).toMatchObject({ id: expect.stringMatching(/^dc_/), name_slug: 'front-door', configured_props: { greeting: 'hi ', times: 2 } });
      const table = await pd('sources');
      expect(table.stdout.split('\n')[0]).toMatch(/^ID +NAME +SLUG +ACTIVE +STATUS +ENDPOINT$/);
      expect(table.stdout).toContain(source.id);
      // 2. The webhook.
      const hook = await pdJson('webhooks', 'create', receiver.url, '--name', 'receiver', '--description', 'e2e sink');
      expect(hook).toMatchObject({ id: expect.stringMatching(/^wh_/), url: receiver.url, name: 'receiver', description: 'e2e sink' });
      receiver.secrets = [hook.signing_secret];
      // 3. The subscription, naming both by display name.
      const sub = await pdJson('subscribe', 'Front Door', 'receiver');
      expect(sub).toMatchObject({ emitter_id: source.id, listener_id: hook.id });
      expect(await pdJson('list', 'subscriptions')).toContainEqual(expect.objectContaining({ id: sub.id, emitter_id: source.id, listener_id: hook.id }));
      // 4. An emit is delivered, signed.
      const r = await fetch(source.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) });
      expect(r.status).toBe(200);
      await eventually(() => receiver.received.length >= 1, 15_000, 'the delivery');
      expect(receiver.received[0]).toMatchObject({ verified: true, json: { greeting: 'hi hi ', body: { n: 1 } } });
      expect(receiver.received[0].headers['x-pd-emitter-id']).toBe(source.id);
    } finally {
      await receiver.stop();
    }
  });

  it('names a source by id, name slug or display name; an ambiguous display name lists the candidates', async () => {
    const a = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'Twin', '--prop', 'greeting=a');
    const b = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'Twin', '--prop', 'greeting=b');
    expect(a.name_slug).not.toBe(b.name_slug);
    for (const ref of [a.id, a.name_slug]) expect((await pdJson('describe', ref)).id).toBe(a.id);
    expect((await pd('describe', a.id)).stdout).toMatch(/^backlog: +0 of 1000 requests waiting \(0 KB of 8,192 KB\), 0 emits waiting$/m);
    const ambiguous = await pd('describe', 'Twin');
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr.trim().split('\n')).toHaveLength(1);
    expect(ambiguous.stderr).toContain(a.id);
    expect(ambiguous.stderr).toContain(b.id);
    // Case does not matter for a display name that only one source has.
    expect((await pdJson('describe', 'front door')).name).toBe('Front Door');
    const unknown = await pd('events', 'No Such Source');
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe('error: no source named "No Such Source" (pd list sources shows them)\n');
  });

  it('types --prop by the component (timer seconds or cron, integers, --props file) and refuses required props left unset', async () => {
    const before = (await rest().get('/v1/users/me/sources', { limit: '100' })).body.data.length;
    const refused = await pd('deploy', fixture('ticker.mjs'), '--prop', 'limit=3');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: required props not set: timer, color \(give --prop timer=60/);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    const badInt = await pd('deploy', fixture('ticker.mjs'), '--prop', 'timer=60', '--prop', 'limit=many', '--prop', 'color=red');
    expect(badInt).toMatchObject({ code: 2, stderr: 'error: --prop limit takes an integer, got "many"\n' });
    const typo = await pd('deploy', fixture('ticker.mjs'), '--prop', 'timer=60', '--prop', 'limt=3');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--prop limt: the component has no such prop (its props: timer, limit, color, loud)');
    // Nothing was deployed by the refusals.
    expect((await rest().get('/v1/users/me/sources', { limit: '100' })).body.data).toHaveLength(before);

    const every = await pdJson('deploy', fixture('ticker.mjs'), '--prop', 'timer=60', '--prop', 'limit=3', '--prop', 'color=red', '--prop', 'loud=yes');
    expect(every.configured_props).toEqual({ timer: { interval_seconds: 60, cron: null, timezone: null }, limit: 3, color: 'red', loud: true });
    const dir = mkdtempSync(join(tmpdir(), 'pd-props-'));
    try {
      const file = join(dir, 'props.json');
      require('node:fs').writeFileSync(file, JSON.stringify({ timer: { cron: '*/5 * * * *' }, limit: 9, color: 'blue' }));
      const cron = await pdJson('deploy', fixture('ticker.mjs'), '--props', file, '--prop', 'limit=4', '--name', 'Cron Ticker');
      expect(cron.configured_props).toMatchObject({ timer: { cron: '*/5 * * * *', interval_seconds: null }, limit: 4, color: 'blue' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // A value the server refuses (not among the options) is one line with the server's code.
    const notAnOption = await pd('deploy', fixture('ticker.mjs'), '--prop', 'timer=60', '--prop', 'limit=3', '--prop', 'color=pink');
    expect(notAnOption.code).toBe(1);
    expect(notAnOption.stderr).toMatch(/^error: configured_props\.color must be one of the prop's options .* \(invalid_request\)\n$/);
  });

  it('updates and deletes a source by name; update keeps the id', async () => {
    const src = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'To Change', '--prop', 'greeting=x');
    const renamed = await pdJson('update', 'To Change', '--name', 'Changed', '--deactivate', '--prop', 'times=3');
    expect(renamed).toMatchObject({ id: src.id, name: 'Changed', active: false, configured_props: { greeting: 'x', times: 3 } });
    const both = await pd('update', src.id, '--activate', '--deactivate');
    expect(both).toMatchObject({ code: 2, stderr: 'error: --activate and --deactivate cannot go together\n' });
    const nothing = await pd('update', src.id);
    expect(nothing.code).toBe(2);
    const reactivated = await pdJson('update', 'changed', '--activate');
    expect(reactivated.active).toBe(true);
    const deleted = await pd('delete', 'Changed');
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted source ${src.id} (Changed)\n` });
    expect((await rest().get(`/v1/sources/${src.id}`)).status).toBe(404);
  });

  it('pd events -n N prints the last N (at most 100), pd events -f follows new ones, pd logs shows the runs', async () => {
    const src = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'Counter', '--prop', 'greeting=c');
    for (let n = 1; n <= 12; n++) {
      const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(r.status).toBe(200);
    }
    await eventually(async () => (await rest().get(`/v1/sources/${src.id}/event_summaries`, { limit: '100' })).body.data.length === 12, 15_000, '12 events');
    const last10 = await pdJson('events', 'Counter', '-n', '10');
    expect(last10.map((e: { event: { body: { n: number } } }) => e.event.body.n)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
    const people = await pd('events', 'counter');
    const lines = people.stdout.trim().split('\n');
    // Default 10, oldest first as in tail.
    expect(lines).toHaveLength(10);
    expect(lines[0]).toContain('n=3: {"greeting":"c","body":{"n":3}}');
    expect(lines[9]).toContain('n=12:');
    const tooMany = await pd('events', 'counter', '-n', '101');
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toBe("error: option '-n <count>' argument '101' is invalid. must be an integer from 1 to 100.\n");

    const follow = spawnPd(['events', 'Counter', '-n', '2', '-f'], env);
    try {
      await follow.waitFor('n=12:');
      await follow.waitFor('following events', 'stderr');
      expect(follow.stdout()).not.toContain('n=10:');
      for (const n of [13, 14]) await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      await follow.waitFor('n=14:');
      expect(follow.stdout().trim().split('\n').map((l) => /n=(\d+):/.exec(l)?.[1])).toEqual(['11', '12', '13', '14']);
    } finally {
      expect(await follow.interrupt()).toBe(0);
    }

    await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 'side', channel: 'alt' }) });
    const alt = await eventually(async () => {
      const e = await pdJson('events', 'Counter', '--event-name', 'alt');
      return e.length ? e : undefined;
    }, 15_000, 'the alt channel');
    expect(alt).toEqual([expect.objectContaining({ event: expect.objectContaining({ body: { n: 'side', channel: 'alt' } }), metadata: expect.objectContaining({ name: 'alt' }) })]);

    const logs = await pd('logs', 'Counter');
    expect(logs.code).toBe(0);
    expect(logs.stdout).toMatch(/run \(http\) ok \(1 emitted, \d+ ms\)\n {2}greeting 1\n/);
    expect(logs.stdout.indexOf('greeting 1\n')).toBeLessThan(logs.stdout.indexOf('greeting 14\n'));
  });

  it('pd logs -f prints runs as they happen', async () => {
    const src = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'Logged', '--prop', 'greeting=l');
    const follow = spawnPd(['logs', 'Logged', '-f', '--json'], env);
    try {
      // The deploy hooks (if any) and nothing else yet; then a run appears.
      await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 'live' }) });
      await follow.waitFor('greeting live');
      const run = follow.stdout().trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.kind === 'run');
      expect(run).toMatchObject({ kind: 'run', ok: true, trigger: 'http', logs: [expect.objectContaining({ message: 'greeting live' })] });
    } finally {
      expect(await follow.interrupt()).toBe(0);
    }
    // A source deleted while followed ends the follow with the server's answer, not a retry loop.
    const gone = spawnPd(['logs', src.id, '-f'], env);
    await gone.waitFor('following logs', 'stderr');
    expect((await rest().del(`/v1/sources/${src.id}`)).status).toBe(200);
    expect(await gone.exited).toBe(1);
    expect(gone.stderr()).toMatch(/\nerror: source .* not found \(not_found\)\n$/);
  });

  it('deploys from a URL and from a registry key (props typed by the registry entry, @version pins)', async () => {
    const code = readFileSync(fixture('greeter.mjs'), 'utf8');
    const host = createHttpServer((req, res) => res.writeHead(req.url === '/greeter.mjs' ? 200 : 404, { 'content-type': 'text/javascript' }).end(code));
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(host.address() as { port: number }).port}/greeter.mjs`;
      const fromUrl = await pdJson('deploy', url, '--name', 'From URL', '--prop', 'greeting=u');
      expect(fromUrl).toMatchObject({ name: 'From URL', configured_props: { greeting: 'u' } });
    } finally {
      await new Promise<void>((r) => host.close(() => r()));
    }
    const published = await pd('publish', fixture('greeter.mjs'));
    expect(published).toMatchObject({ code: 0, stdout: 'pd-fixtures-greeter@0.1.0\n' });
    expect(await pdJson('list', 'components')).toContainEqual(expect.objectContaining({ key: 'pd-fixtures-greeter', version: '0.1.0', type: 'source' }));
    // `greeting` is a string prop: 123 stays text (untyped, it would be a number and refused).
    const byKey = await pdJson('deploy', 'pd-fixtures-greeter', '--name', 'By Key', '--prop', 'greeting=123', '--prop', 'times=2');
    expect(byKey.configured_props).toMatchObject({ greeting: '123', times: 2 });
    const pinned = await pdJson('deploy', 'pd-fixtures-greeter@0.1.0', '--name', 'Pinned', '--prop', 'greeting=p');
    expect(pinned.component_id).toBe(byKey.component_id);
    const refused = await pd('deploy', 'pd-fixtures-greeter');
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringMatching(/^error: required prop not set: greeting /) });
  });

  it('pd unpublish takes one version or the whole key out of the registry; deployed sources keep running; a built-in key is refused', async () => {
    const v1 = readFileSync(fixture('greeter.mjs'), 'utf8').replace('"pd-fixtures-greeter"', '"pd-fixtures-unpub"');
    const v2 = v1.replace('version: "0.1.0"', 'version: "0.2.0"');
    const dir = mkdtempSync(join(tmpdir(), 'pd-unpub-'));
    try {
      writeFileSync(join(dir, 'v1.mjs'), v1);
      writeFileSync(join(dir, 'v2.mjs'), v2);
      expect((await pd('publish', join(dir, 'v1.mjs'))).stdout).toBe('pd-fixtures-unpub@0.1.0\n');
      expect((await pd('publish', join(dir, 'v2.mjs'))).stdout).toBe('pd-fixtures-unpub@0.2.0\n');
      const deployed = await pdJson('deploy', 'pd-fixtures-unpub@0.2.0', '--name', 'Unpub v2', '--prop', 'greeting=hey');

      expect(await pd('unpublish', 'pd-fixtures-unpub@0.2.0')).toMatchObject({ code: 0, stdout: 'unpublished pd-fixtures-unpub@0.2.0\n' });
      // The key now means its remaining version; the unpublished one is gone.
      expect(await pdJson('list', 'components')).toContainEqual(expect.objectContaining({ key: 'pd-fixtures-unpub', version: '0.1.0' }));
      expect(await pd('deploy', 'pd-fixtures-unpub@0.2.0', '--prop', 'greeting=x')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: .*not found \(not_found\)\n$/) });
      // What was deployed from it keeps running.
      const ran = await rest().post(`/v1/sources/${deployed.id}/run`);
      expect(ran.status).toBe(200);

      expect(await pd('unpublish', 'pd-fixtures-unpub')).toMatchObject({ code: 0, stdout: 'unpublished pd-fixtures-unpub\n' });
      expect(await pdJson('list', 'components')).not.toContainEqual(expect.objectContaining({ key: 'pd-fixtures-unpub' }));
      expect(await pd('unpublish', 'pd-fixtures-unpub')).toMatchObject({ code: 1, stderr: expect.stringMatching(/not found \(not_found\)\n$/) });
      // A version can be published again once unpublished.
      expect((await pd('publish', join(dir, 'v1.mjs'))).stdout).toBe('pd-fixtures-unpub@0.1.0\n');
      expect(await pd('unpublish', 'sluice-http-webhook')).toMatchObject({ code: 1, stderr: expect.stringMatching(/built-in component .* \(conflict\)\n$/) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists, describes, shows the runs of and deletes a workflow named by its display name', async () => {
    const created = await rest().post('/v1/workflows', {
      name: 'Nightly Report',
      trigger: { type: 'manual' },
      steps: [{ name: 'say', component_code: 'export default { name: "say", version: "0.1.0", type: "action", props: {}, async run({ $ }) { $.export("$summary", "said"); return 1; } }', configured_props: {} }],
    });
    expect(created.status).toBe(200);
    const wf = created.body.data;
    expect(await pdJson('workflows')).toContainEqual(expect.objectContaining({ id: wf.id, name: 'Nightly Report' }));
    const described = await pd('describe', 'Nightly Report');
    expect(described.stdout).toMatch(new RegExp(`^id: +${wf.id}$`, 'm'));
    expect(described.stdout).toMatch(/^trigger: +manual$/m);
    expect(described.stdout).toMatch(/^backlog: +0 of 1000 runs waiting, 0 emits waiting$/m);
    expect((await rest().post(`/v1/workflows/${wf.id}/run`, { event: {} })).status).toBe(200);
    const runs = await pdJson('runs', 'nightly-report', '-n', '5');
    expect(runs).toEqual([expect.objectContaining({ status: 'succeeded', steps: [expect.objectContaining({ name: 'say', status: 'succeeded' })] })]);
    expect(await pd('delete', 'Nightly Report')).toMatchObject({ code: 0, stdout: `deleted workflow ${wf.id} (Nightly Report)\n` });
    expect((await rest().get(`/v1/workflows/${wf.id}`)).status).toBe(404);
  });

  it('shows the progress of a deploy on stderr, the result on stdout', async () => {
    const r = await runPd(['deploy', fixture('greeter.mjs'), '--name', 'Progress', '--prop', 'greeting=p', '--json'], { ...env, SLUICE_PD_PROGRESS_AFTER_MS: '0' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'Progress' });
    expect(r.stderr).toMatch(/^saving .*greeter\.mjs \(the server installs its packages\)\.\.\.\n/);
    expect(r.stderr).toMatch(/^deploying .*greeter\.mjs: done in \d+ s$/m);
  });

  it('pd update --code replaces the code and keeps the id; pd unsubscribe removes a subscription', async () => {
    const src = await pdJson('deploy', fixture('greeter.mjs'), '--name', 'Recoded', '--prop', 'greeting=r');
    const dir = mkdtempSync(join(tmpdir(), 'pd-update-'));
    try {
      const file = join(dir, 'v2.mjs');
      require('node:fs').writeFileSync(file, readFileSync(fixture('greeter.mjs'), 'utf8').replace('version: "0.1.0"', 'version: "0.2.0"').replace('this.$emit({', 'this.$emit({ v: 2, '));
      const updated = await pdJson('update', 'Recoded', '--code', file);
      expect(updated).toMatchObject({ id: src.id, configured_props: { greeting: 'r' } });
      expect(updated.component_id).not.toBe(src.component_id);
      await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
      await eventually(async () => (await pdJson('events', src.id, '-n', '1'))[0]?.event?.v === 2, 15_000, 'the new code runs');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const hook = await pdJson('webhooks', 'create', 'https://example.com/recoded', '--name', 'recoded-hook');
    const sub = await pdJson('subscribe', 'Recoded', 'recoded-hook');
    expect(await pd('unsubscribe', 'Recoded', 'recoded-hook')).toMatchObject({ code: 0, stdout: `unsubscribed ${hook.id} from ${src.id}\n` });
    expect((await pdJson('subscriptions')).map((s: { id: string }) => s.id)).not.toContain(sub.id);
    const again = await pdJson('subscribe', 'Recoded', hook.id);
    expect(await pd('unsubscribe', again.id)).toMatchObject({ code: 0, stdout: `deleted subscription ${again.id}\n` });
    expect(await pd('webhooks', 'delete', 'recoded-hook')).toMatchObject({ code: 0, stdout: `deleted webhook ${hook.id} (recoded-hook)\n` });
  });

  it('reports a missing local file as such, not as an unknown key', async () => {
    for (const target of ['./x.mjs', 'x.ts', 'dir/x']) {
      const r = await pd('deploy', target);
      expect(r).toMatchObject({ code: 2, stdout: '', stderr: `error: no such file: ${target}\n` });
    }
    const key = await pd('deploy', 'no-such-key-anywhere');
    expect(key).toMatchObject({ code: 1, stderr: 'error: component with key no-such-key-anywhere not found (not_found)\n' });
  });

  it('gives one clear line and a non-zero exit for bad arguments and for a server that is down', async () => {
    for (const [args, line] of [
      [['bogus'], "error: unknown command 'bogus'"],
      [['list', 'things'], 'error: pd list takes one of sources, workflows, webhooks, subscriptions, components, accounts; got "things"'],
      [['deploy'], "error: missing required argument 'target'"],
      [['events', 'x', '--nope'], "error: unknown option '--nope'"],
      [['init', 'widget', 'w'], 'error: pd init takes source, action or app; got "widget"'],
    ] as [string[], string][]) {
      const r = await pd(...args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr.startsWith(line)).toBe(true);
    }
    const down = `http://127.0.0.1:${await closedPort()}`;
    const r = await runPd(['list', 'sources'], pdEnv({ SLUICE_URL: down, SLUICE_API_KEY: 'sk_whatever' }));
    expect(r).toMatchObject({ code: 3, stdout: '' });
    expect(r.stderr).toBe(`error: cannot reach the Sluice server at ${down} (connection refused); is it running? (SLUICE_URL or pd login --url)\n`);
    const noKey = await runPd(['sources'], pdEnv({ SLUICE_URL: server.url }));
    expect(noKey).toMatchObject({ code: 4, stderr: 'error: no API key: run pd login (or set SLUICE_API_KEY)\n' });
    const badKey = await runPd(['sources'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: 'sk_wrong_key_000000' }));
    expect(badKey.code).toBe(4);
    expect(badKey.stderr).toMatch(/^error: .* \(unauthorized\)\n$|^error: .*\(\w+\)\n$/);
    const help = await pd('help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    // A reader that stops early (`pd help | head -1`) ends pd quietly.
    const head = spawnPd(['help'], env);
    head.proc.stdout!.destroy();
    expect(await head.exited).toBe(0);
    expect(head.stderr()).toBe('');
    const deployHelp = await pd('deploy', '--help');
    expect(deployHelp.code).toBe(0);
    expect(deployHelp.stdout).toContain('--prop <name=value>');
  });

  it('pd login writes the config file (mode 0600, profiles); pd whoami reads it back', async () => {
    const xdg = mkdtempSync(join(tmpdir(), 'pd-xdg-'));
    try {
      const noEnv = pdEnv({ XDG_CONFIG_HOME: xdg });
      const login = await runPd(['login', '--api-key', server.apiKey, '--url', server.url], noEnv);
      expect(login.code).toBe(0);
      const file = join(xdg, 'sluice', 'config');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toContain(`api_key = ${server.apiKey}`);
      const me = (await rest().get('/v1/users/me')).body.data;
      const who = await runPd(['whoami', '--json'], noEnv);
      expect(JSON.parse(who.stdout)).toMatchObject({ id: me.id, base_url: server.url, profile: 'default', key_from: `${file} [default]` });
      expect((await runPd(['sources'], noEnv)).code).toBe(0);

      // A key the server refuses is not saved; a named profile is kept beside the default one.
      const bad = await runPd(['login', '--profile', 'other', '--api-key', 'sk_not_a_key_0000', '--url', server.url], noEnv);
      expect(bad.code).toBe(4);
      expect(readFileSync(file, 'utf8')).not.toContain('sk_not_a_key');
      expect((await runPd(['login', '--profile', 'other', '--api-key', server.apiKey, '--url', server.url], noEnv)).code).toBe(0);
      expect(readFileSync(file, 'utf8')).toMatch(/\[default\][\s\S]*\[other\]/);
      expect(JSON.parse((await runPd(['--profile', 'other', 'whoami', '--json'], noEnv)).stdout).profile).toBe('other');
      const missing = await runPd(['whoami', '--profile', 'nope'], noEnv);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('no profile "nope"');
      // The environment wins over the file.
      const envWins = await runPd(['whoami', '--json'], pdEnv({ XDG_CONFIG_HOME: xdg, SLUICE_API_KEY: 'sk_env_wins_00000' }));
      expect(envWins.code).toBe(4);
      // Not in a terminal and no --api-key: refused, nothing asked.
      const noTty = await runPd(['login'], noEnv);
      expect(noTty).toMatchObject({ code: 2, stderr: 'error: pd login needs --api-key KEY when not run in a terminal\n' });
    } finally {
      rmSync(xdg, { recursive: true, force: true });
    }
  });

  it('pd init writes templates that deploy as they are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pd-init-'));
    try {
      for (const [flags, file] of [[[], 'hook-in.mjs'], [['--timer', '--db'], 'poll-thing.mjs'], [['--http', '--timer'], 'both-ways.mjs']] as [string[], string][]) {
        const name = file.replace('.mjs', '').replace('-', ' ');
        const init = await pd('init', 'source', name, '--dir', dir, ...flags);
        expect(init).toMatchObject({ code: 0, stdout: `${join(dir, file)}\n` });
        const src = await pdJson('deploy', join(dir, file));
        expect(src.status).toBe('deployed');
        if (flags.includes('--timer')) expect(src.configured_props.timer).toMatchObject({ interval_seconds: 900 });
        if (!flags.length || flags.includes('--http')) {
          const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
          expect(r.status).toBe(200);
          await eventually(async () => (await pdJson('events', src.id, '-n', '1'))[0]?.event?.body?.a === 1, 15_000, 'the template emits');
        } else {
          const ran = await rest().post(`/v1/sources/${src.id}/run`);
          expect(ran.body.data).toMatchObject({ ok: true, emitted: [expect.objectContaining({ event: expect.objectContaining({ count: 1 }) })] });
        }
      }
      expect(await pd('init', 'action', 'Say Hi', '--dir', dir)).toMatchObject({ code: 0 });
      const ran = await pdJson('run', join(dir, 'say-hi.mjs'), '--prop', 'name=ada');
      expect(ran).toMatchObject({ ret: 'Hello, ada!' });
      expect(await pd('init', 'app', 'acme', '--dir', dir)).toMatchObject({ code: 0 });
      expect(existsSync(join(dir, 'acme.app.mjs'))).toBe(true);
      const again = await pd('init', 'action', 'Say Hi', '--dir', dir);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('exists; --force overwrites it');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
