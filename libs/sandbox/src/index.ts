export * from './sandbox.types';
export * from './component-code.error';
export * from './component.bundler';
export { inlineRelativeImports } from './local-entry.bundler';
export * from './sandbox.limits';
export { DEFAULT_RUN_OUTPUT_LIMITS, type RunOutputLimits } from './guest/run-output-limits.guest';
export { jsonRequestBody, parseDroppingRiskyKeys } from './guest/json-request-body.guest';
export * from './sandbox.supervisor';
export { sendStaysInServer } from './invocation.chain';
export { resolveWorkerScript, WORKER_SCRIPT_NAME } from './worker-script.locator';
export type { DescribeOutcome } from './sandbox.protocol';
export * from './package-cache';
export { parsePackageSpecifier, type PackageSpecifier } from './package-specifier.parser';
export {
  MAX_ADDITIONAL_PROPS, MAX_ADDITIONAL_PROPS_BYTES, MAX_PROP_OPTIONS, MAX_PROP_OPTIONS_BYTES, UNKNOWN_PROP_ERROR,
} from './guest/prop-configuration.guest';
