import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ComponentDefinition } from '@app/domain';
import { BuiltinRegistry, defaultRegistryDir, registryEntryFiles, registryRuleBreach } from './builtin-registry';

/**
 * The registry's file rules on a real directory with real esbuild inlining. The sandbox's part
 * (bundling packages, reading the definition in an isolate) is covered by
 * test/builtin-registry.e2e-spec.ts; here `compile` reads the few literal fields these files have.
 */
function literalDefinition(code: string): ComponentDefinition {
  const field = (name: string) => new RegExp(`${name}: "([^"]*)"`).exec(code)?.[1];
  return {
    name: field('name')!, key: field('key'), version: field('version')!, type: (field('type') ?? 'source') as 'source' | 'action',
    props: [], hooks: [], methods: [], hasRun: true,
  };
}

function write(root: string, rel: string, text: string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}

const component = (name: string, key: string, type = 'source', version = '1.0.0') =>
  `import { shared } from "../common/shared.mjs";\nimport dayjs from "dayjs@^1.11.0";\nexport default { name: "${name}", key: "${key}", version: "${version}", type: "${type}", run() { return [shared, dayjs]; } };\n`;

describe('BuiltinRegistry', () => {
  let root: string;
  let compiles: string[];
  let failNext: Set<string>;
  let registry: BuiltinRegistry;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'sluice-registry-'));
    write(root, 'sluice/common/shared.mjs', 'export const shared = "from the common file";\n');
    write(root, 'sluice/sources/good-source.mjs', component('Good Source', 'sluice-good-source'));
    write(root, 'sluice/actions/good-action.mjs', component('Good Action', 'sluice-good-action', 'action'));
    write(root, 'sluice/sources/wrong-key.mjs', component('Wrong Key', 'sluice-another-key'));
    write(root, 'sluice/actions/not-an-action.mjs', component('Not An Action', 'sluice-not-an-action'));
    write(root, 'sluice/sources/loose-version.mjs', component('Loose Version', 'sluice-loose-version', 'source', 'v1'));
    write(root, 'sluice/README.md', 'not a component');
    compiles = [];
    failNext = new Set();
    registry = new BuiltinRegistry(root, async (code, file) => {
      compiles.push(file);
      if (failNext.delete(file)) throw new Error('the package registry cannot be reached');
      return { bundle: `bundled:${code.length}`, codeHash: `hash-of-${file}`, definition: literalDefinition(code) };
    });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('entries are the .mjs files of <app>/sources and <app>/actions; shared files are not', () => {
    expect(registryEntryFiles(root).map((f) => f.slice(root.length + 1))).toEqual([
      'sluice/actions/good-action.mjs', 'sluice/actions/not-an-action.mjs',
      'sluice/sources/good-source.mjs', 'sluice/sources/loose-version.mjs', 'sluice/sources/wrong-key.mjs',
    ]);
  });

  it('loads what follows the registry rules and reports each file that does not, with why', async () => {
    const { components, failures } = await registry.all();
    expect(components.map((c) => c.key)).toEqual(['sluice-good-action', 'sluice-good-source']);
    expect(failures).toEqual([
      { file: 'sluice/actions/not-an-action.mjs', error: 'built-in sluice/actions/not-an-action.mjs: is a source in the actions folder' },
      { file: 'sluice/sources/loose-version.mjs', error: 'built-in sluice/sources/loose-version.mjs: version must be a semantic version x.y.z, got "v1"' },
      { file: 'sluice/sources/wrong-key.mjs', error: 'built-in sluice/sources/wrong-key.mjs: key must be "sluice-wrong-key" (app slug and slugified name), got "sluice-another-key"' },
    ]);
  });

  it('the code is the entry with its relative imports inlined, packages left as imports, paths relative to the registry', async () => {
    const c = (await registry.find('sluice-good-source'))!;
    expect(c.code).toContain('"from the common file"');
    expect(c.code).toContain('from "dayjs@^1.11.0"');
    expect(c.code).not.toContain(root);
    expect(c.code).toContain('sluice/common/shared.mjs');
    expect(c).toMatchObject({ key: 'sluice-good-source', version: '1.0.0', type: 'source', name: 'Good Source', file: 'sluice/sources/good-source.mjs' });
  });

  it('find loads only the file named after the key, once; other keys and versions are not built-ins', async () => {
    expect(await registry.find('sluice-good-action', '1.0.0')).toMatchObject({ key: 'sluice-good-action' });
    expect(await registry.find('sluice-good-action')).toMatchObject({ key: 'sluice-good-action' });
    expect(compiles).toEqual(['sluice/actions/good-action.mjs']);
    expect(await registry.find('sluice-good-action', '2.0.0')).toBeUndefined();
    expect(await registry.find('sluice-no-such-file')).toBeUndefined();
    expect(await registry.find('good-action')).toBeUndefined();
    expect(compiles).toEqual(['sluice/actions/good-action.mjs']);
    // A file named after the key whose definition says another key is not that key either.
    await expect(registry.find('sluice-wrong-key')).rejects.toThrow(/key must be "sluice-wrong-key"/);
  });

  it('a file that failed to load is tried again at the next use; a loaded one is kept', async () => {
    failNext.add('sluice/sources/good-source.mjs');
    await expect(registry.find('sluice-good-source')).rejects.toThrow('the package registry cannot be reached');
    expect(await registry.find('sluice-good-source')).toMatchObject({ key: 'sluice-good-source' });
    expect(await registry.find('sluice-good-source')).toMatchObject({ key: 'sluice-good-source' });
    expect(compiles.filter((f) => f === 'sluice/sources/good-source.mjs')).toHaveLength(2);
  });

  it('without a registry directory there are no built-ins', async () => {
    const none = new BuiltinRegistry(null, async () => { throw new Error('never called'); });
    expect(await none.all()).toEqual({ components: [], failures: [] });
    expect(await none.find('sluice-http-webhook')).toBeUndefined();
  });

  it('the shipped registry is found from the sources and its definitions follow the rules', () => {
    const dir = defaultRegistryDir()!;
    expect(dir).toMatch(/registry\/components$/);
    expect(registryEntryFiles(dir).length).toBeGreaterThanOrEqual(15);
    const def = { name: 'HTTP Webhook', key: 'sluice-http-webhook', version: '1.0.0', type: 'source' } as ComponentDefinition;
    expect(registryRuleBreach(def, join(dir, 'sluice/sources/http-webhook.mjs'))).toBeNull();
    expect(registryRuleBreach(def, join(dir, 'sluice/sources/webhook.mjs'))).toBe('file must be named http-webhook.mjs after its key');
  });
});
