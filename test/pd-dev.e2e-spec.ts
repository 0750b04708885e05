import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { pdEnv, spawnPd } from './support/pd-cli';

/** A source file that imports a local helper, which the test edits. */
function writeProject(dir: string, word: string): { source: string; helper: string } {
  const helper = join(dir, 'lib', 'word.mjs');
  const source = join(dir, 'dev-source.mjs');
  require('node:fs').mkdirSync(join(dir, 'lib'), { recursive: true });
  writeFileSync(helper, `export const word = ${JSON.stringify(word)};\n`);
  writeFileSync(source, `import { word } from "./lib/word.mjs";
export default {
  key: "pd-dev-fixture",
  name: "Dev Fixture",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    console.log("saying " + word);
    this.$emit({ word, n: event.body?.n });
  },
};
`);
  return { source, helper };
}

describe('pd dev: deploy once, then update the same source on every save of an imported file', () => {
  let server: SluiceProcess;
  let dir: string;
  beforeAll(async () => {
    server = await startSluice();
    dir = mkdtempSync(join(tmpdir(), 'pd-dev-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('picks up two successive saves of an imported file, streams events and logs, and leaves the source deployed on Ctrl-C', async () => {
    const { source, helper } = writeProject(dir, 'one');
    const dev = spawnPd(['dev', source, '--json'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    let endpoint: string;
    let id: string;
    try {
      await dev.waitFor(/watching 2 files/, 'stderr');
      const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
      expect(sources).toHaveLength(1);
      ({ id, endpoint_url: endpoint } = sources[0]);
      const lines = () => dev.stdout().trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const post = (n: number) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });

      expect((await post(1)).status).toBe(200);
      await dev.waitFor('"n":1');
      for (const [save, word] of [[1, 'two'], [2, 'three']] as [number, string][]) {
        writeFileSync(helper, `export const word = ${JSON.stringify(word)};\n`);
        await dev.waitFor(`updated ${id} (save ${save})`, 'stderr');
        expect((await post(save + 1)).status).toBe(200);
        await dev.waitFor(`"n":${save + 1}`);
      }
      await dev.waitFor('saying three');
      const events = lines().filter((l) => l.type === 'event').map((l) => l.event);
      expect(events).toEqual([{ word: 'one', n: 1 }, { word: 'two', n: 2 }, { word: 'three', n: 3 }]);
      const runs = lines().filter((l) => l.type === 'log' && l.kind === 'run');
      expect(runs.map((r) => r.logs[0].message)).toEqual(['saying one', 'saying two', 'saying three']);
      // Every save updated the same source: still one, same id and endpoint.
      const after = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
      expect(after).toEqual([expect.objectContaining({ id, endpoint_url: endpoint })]);
    } finally {
      expect(await dev.interrupt()).toBe(0);
    }
    expect(dev.stderr()).toContain(`stopped; ${id!} stays deployed`);
    expect((await api(server.url, server.apiKey).get(`/v1/sources/${id!}`)).body.data).toMatchObject({ active: true });
    expect((await fetch(endpoint!, { method: 'POST', body: '{}' })).status).toBe(200);
  });

  it('pd dev --dc attaches to the existing source by name; a save that does not bundle keeps the old code running', async () => {
    const { source, helper } = writeProject(dir, 'again');
    const dev = spawnPd(['dev', '--dc', 'Dev Fixture', source], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    try {
      await dev.waitFor(/attached to dc_\w+ \(dev-fixture\)/, 'stderr');
      await dev.waitFor('watching 2 files', 'stderr');
      const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
      expect(sources).toHaveLength(1);
      writeFileSync(helper, 'export const word = ;\n');
      await dev.waitFor(/error: cannot bundle .*word\.mjs:1: .* \(still running the previous code\)/, 'stderr');
      await fetch(sources[0].endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":7}' });
      await dev.waitFor('{"word":"again","n":7}');
      writeFileSync(helper, 'export const word = "fixed";\n');
      await dev.waitFor(/updated dc_\w+ \(save 1\)/, 'stderr');
    } finally {
      expect(await dev.interrupt()).toBe(0);
    }
  });
});
