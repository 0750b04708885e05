/**
 * Built-ins captured when the runtime is installed, before any component code runs, so that a
 * component (or a package it bundles) that patches `JSON` cannot corrupt what the host receives.
 */
export const jsonStringify = JSON.stringify;
export const jsonParse = JSON.parse;
export const hasOwn = Object.hasOwn;
export const objectKeys = Object.keys;
export const defineProperty = Object.defineProperty;
export const fromCharCode = String.fromCharCode;
/** The clock a batch of invocations is sliced by (`invokeBatch`). */
export const dateNow = Date.now;

/** Defines a global the way web platforms do: writable, configurable, not enumerable. */
export function defineGlobal(name: string, value: unknown): void {
  defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}
