// What a Node built-in without a sandbox version (fs, net, child_process, http...) resolves to:
// importing it works, so packages that only touch it on some code path still load; calling any of
// its functions, at any depth (`fs.promises.readFile`), throws a clear error naming the function.

// Left alone so the stub still looks like an ordinary function and module to bundler glue
// (`__esModule`), promise machinery (`then`) and class syntax (`prototype`).
const PASS_THROUGH = new Set<PropertyKey>(['__esModule', 'then', 'toJSON', 'constructor', 'prototype', 'name', 'length', 'call', 'apply', 'bind']);

function stub(path: string, knownMembers: readonly string[] = []): unknown {
  const target = function (): never {
    throw new Error(`${path} is not available in the sandbox`);
  };
  const members = new Map<string, unknown>();
  const member = (name: string): unknown => {
    let found = members.get(name);
    if (found === undefined) {
      found = stub(`${path}.${name}`);
      members.set(name, found);
    }
    return found;
  };
  // Own enumerable properties, so that named imports (`import { readFileSync } from "fs"`) bind.
  for (const name of knownMembers) {
    if (!PASS_THROUGH.has(name)) Object.defineProperty(target, name, { get: () => member(name), enumerable: true, configurable: true });
  }
  return new Proxy(target, {
    get(base, key, receiver) {
      if (typeof key === 'symbol' || PASS_THROUGH.has(key)) return Reflect.get(base, key, receiver);
      return member(key);
    },
  });
}

/**
 * A stand-in for module `moduleName`: `functionNames` (the real module's functions) are listed as
 * its own properties; those and any other property are functions that throw when called, and so
 * is the module itself (`assert(...)`).
 */
function unavailableModule(moduleName: string, functionNames: readonly string[]): unknown {
  return stub(moduleName, functionNames);
}

export = unavailableModule;
