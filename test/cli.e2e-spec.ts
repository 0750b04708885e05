import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const CLI = resolve(__dirname, '..', 'dist', 'apps', 'cli', 'main.js');

describe('pd: deploying a component from a file with its app file and common object', () => {
  let server: SluiceProcess;
  const pd = async (...args: string[]) => {
    // --json: these tests read the answers as data (people get tables).
    const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings=ExperimentalWarning', CLI, ...args, '--json'], {
      env: { ...process.env, SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey },
    });
    return JSON.parse(stdout);
  };

  beforeAll(async () => {
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('pd deploy <file> bundles relative imports; pd sources / events / logs read it back', async () => {
    const file = join(__dirname, 'fixtures', 'components', 'app-file', 'new-greeting.mjs');
    const src = await pd('deploy', file);
    expect(src).toMatchObject({ name: 'New Greeting', name_slug: 'new-greeting', active: true, configured_props: { who: 'world' } });
    const comp = await (await fetch(`${server.url}/v1/components/${src.component_id}`, { headers: { authorization: `Bearer ${server.apiKey}` } })).json() as { data: { configurable_props: unknown[] } };
    expect(comp.data.configurable_props).toContainEqual({
      name: 'who', type: 'string', label: 'Who to greet', optional: true, default: 'world', propDefinition: ['demo', 'who'],
    });
    const listed = await pd('sources');
    expect(listed).toEqual([expect.objectContaining({ id: src.id, name_slug: 'new-greeting', active: true, endpoint_url: src.endpoint_url })]);
    const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ who: 'sluice' }) });
    expect(r.status).toBe(200);
    const events = await eventually(async () => {
      const e = await pd('events', 'new-greeting', '-n', '1');
      return e.length === 1 ? e : undefined;
    }, 10_000, 'event via pd events');
    expect(events[0].event).toEqual({ greeting: 'hello sluice', shout: 'HELLO SLUICE!' });
    const logs = await pd('logs', src.id);
    expect(logs[0]).toMatchObject({ kind: 'run', ok: true, trigger: 'http' });
  });

  it('pd deploy of a missing key fails with a clear message', async () => {
    await expect(pd('deploy', 'no-such-key-anywhere')).rejects.toThrow(/not found/);
  });
});
