export * from './sandbox.types';
export * from './component-code.error';
export * from './component.bundler';
export * from './sandbox.limits';
export * from './sandbox.supervisor';
export { resolveWorkerScript, WORKER_SCRIPT_NAME } from './worker-script.locator';
export type { DescribeOutcome } from './sandbox.protocol';
export * from './package-cache';
export { parsePackageSpecifier, type PackageSpecifier } from './package-specifier.parser';
