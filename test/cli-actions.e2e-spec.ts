import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const CLI = resolve(__dirname, '..', 'dist', 'apps', 'cli', 'main.js');
const actionFile = (...parts: string[]) => join(__dirname, 'fixtures', 'actions', ...parts);

describe('pd publish and pd run (actions from the command line)', () => {
  let server: SluiceProcess;
  /** Runs pd; resolves with its exit code and output, whatever the code. */
  const pd = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--no-warnings=ExperimentalWarning', CLI, ...args], {
        env: { ...process.env, SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey },
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  beforeAll(async () => {
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('pd publish <file> bundles its relative imports and prints key@version; pd run <key> runs it with typed --prop values', async () => {
    const published = await pd('publish', actionFile('with-common', 'format-greeting.mjs'));
    expect(published).toMatchObject({ code: 0, stdout: 'sluice-fixtures-format-greeting@1.0.0\n' });
    const registry = await api(server.url, server.apiKey).get('/v1/components/registry');
    expect(registry.body.data).toContainEqual(expect.objectContaining({ key: 'sluice-fixtures-format-greeting', version: '1.0.0', type: 'action' }));

    const run = await pd('run', 'sluice-fixtures-format-greeting', '--prop', 'name=ada', '--prop', 'times=2');
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer).toMatchObject({ ok: true, ret: 'Hello, ada! Hello, ada!', exports: { length: 23 } });
    expect(answer.os).toEqual([{ k: 'console.log', ts: expect.any(Number), msg: 'formatted 2' }]);

    // `name` is a string prop: "123" stays text; the pinned version runs too.
    const pinned = await pd('run', 'sluice-fixtures-format-greeting@1.0.0', '--prop', 'name=123');
    expect(JSON.parse(pinned.stdout)).toMatchObject({ ok: true, ret: 'Hello, 123!' });
  });

  it('pd publish prints the warnings of a definition on stderr', async () => {
    const published = await pd('publish', actionFile('transform-records.mjs'));
    expect(published.code).toBe(0);
    expect(published.stdout).toBe('sluice-fixtures-transform-records@0.1.0\n');
    expect(published.stderr).toContain('warning: props.separator.default');
  });

  it('pd run <file> runs an action file with JSON --prop values', async () => {
    const run = await pd('run', actionFile('transform-records.mjs'), '--prop', 'records=[{"name":"ada"},{"name":"bob"}]', '--prop', 'field=name');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, ret: { joined: 'ada,bob' }, exports: { count: 2 }, summary: 'Picked 2 name values' });
  });

  it('pd run exits 1 on a failed run after printing it, and on a ConfigurationError with its message', async () => {
    const failed = await pd('run', actionFile('configuration-check.mjs'), '--prop', 'limit=-1');
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout).os.at(-1)).toMatchObject({ k: 'error', err: { name: 'RangeError' } });
    const refused = await pd('run', actionFile('configuration-check.mjs'), '--prop', 'limit=1000');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: Limit must be at most 100, got 1000 (configuration_error)\n');
  });
});
