import { createHash } from 'node:crypto';
import { bundleComponent, ComponentCodeError } from '@app/sandbox';

async function codeError(code: string, filename?: string): Promise<ComponentCodeError> {
  try {
    await bundleComponent(code, { filename });
  } catch (error) {
    expect(error).toBeInstanceOf(ComponentCodeError);
    return error as ComponentCodeError;
  }
  throw new Error('expected a ComponentCodeError');
}

function evaluate(bundle: string): unknown {
  // The bundle is a plain script: evaluated, it leaves the exports in var __sluiceComponent.
  return new Function(`${bundle}\nreturn __sluiceComponent;`)();
}

describe('bundleComponent', () => {
  it('bundles an ES module and exposes its default export', async () => {
    const code = 'export default { name: "es", version: "1.0.0", async run(e) { this.$emit(e) } }';
    const { bundle, codeHash } = await bundleComponent(code);
    expect(codeHash).toBe(createHash('sha256').update(code).digest('hex'));
    const exported = evaluate(bundle) as { __esModule?: boolean; default: { name: string; run: unknown } };
    expect(exported.__esModule).toBe(true);
    expect(exported.default.name).toBe('es');
    expect(typeof exported.default.run).toBe('function');
  });

  it('bundles CommonJS module.exports', async () => {
    const { bundle } = await bundleComponent('module.exports = { name: "cjs", run() { return 1 } }');
    const exported = evaluate(bundle) as { name: string; __esModule?: boolean };
    expect(exported.name).toBe('cjs');
    expect(exported.__esModule).toBeUndefined();
  });

  it('compiles TypeScript when the filename says so', async () => {
    const code = 'interface P { n: number }\nconst p: P = { n: 2 };\nexport default { name: "ts", version: "1", props: {}, run(): number { return p.n } }';
    const { bundle } = await bundleComponent(code, { filename: 'component.ts' });
    expect((evaluate(bundle) as { default: { name: string } }).default.name).toBe('ts');
  });

  it('refuses package imports naming the package', async () => {
    const error = await codeError('import axios from "axios";\nexport default { run() { return axios } }');
    expect(error.message).toContain('package imports are not available yet: axios');
    expect(error.location).toEqual({ line: 1, column: 19 });
    expect((await codeError('const _ = require("lodash/get");\nmodule.exports = {}')).message).toContain('package imports are not available yet: lodash');
    expect((await codeError('import { axios } from "@pipedream/platform@1.2.0";\nexport default {}')).message).toContain(
      'package imports are not available yet: @pipedream/platform',
    );
  });

  it('resolves Node built-ins to the sandbox shims, with or without a package cache', async () => {
    const { bundle, packages } = await bundleComponent(`import path from "node:path";
      import { parse } from "querystring";
      import fs, { readFileSync } from "fs";
      const attempt = (fn) => { try { return fn(); } catch (e) { return e.message; } };
      export default { joined: path.join("/a", "../b"), query: parse("x=1&x=2"), fs: [attempt(() => fs.readFileSync("/etc/passwd")), attempt(() => readFileSync("x"))] }`);
    expect(packages).toEqual({});
    expect((evaluate(bundle) as { default: unknown }).default).toEqual({
      joined: '/b',
      query: { x: ['1', '2'] },
      fs: ['fs.readFileSync is not available in the sandbox', 'fs.readFileSync is not available in the sandbox'],
    });
  });

  it('refuses relative imports of code saved without files', async () => {
    expect((await codeError('import common from "./common.mjs";\nexport default { ...common }')).message).toContain('relative imports');
  });

  it('reports syntax errors with their line and column', async () => {
    const error = await codeError('export default {\n  run() {\n    let x = ;\n  }\n}');
    expect(error.location).toEqual({ line: 3, column: 13 });
    expect(error.message).toMatch(/Unexpected ";" at line 3, column 13/);
  });

  it('reports TypeScript syntax only in .ts files', async () => {
    await codeError('const x: number = 1;\nexport default { x }', 'component.mjs');
    await expect(bundleComponent('const x: number = 1;\nexport default { x }', { filename: 'c.ts' })).resolves.toBeDefined();
  });
});
