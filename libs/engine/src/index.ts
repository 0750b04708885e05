// The public surface of the engine: the facade, its use cases and query side, and their errors.
// The runtime behind them (store, actors, sender, timers, sandbox, key box) stays internal.
export * from './sluice-engine';
export { EngineQueries } from './engine-queries';
export * from './engine-errors';
export { hashApiKey } from './api-key-hash';
export { HookFailedError } from './source-actor';
export type { RunOutcome } from './source-actor';
export { ProjectionFailedError } from '@app/processing';
export * from './use-cases/account-use-cases';
export * from './use-cases/action-use-cases';
export { actionInvocation, actionObservations, throwawayActionStore } from './action-invocation';
export type { ActionCode, ActionObservation, ActionStore } from './action-invocation';
export * from './use-cases/component-use-cases';
export * from './use-cases/endpoint-use-cases';
export * from './use-cases/prop-use-cases';
export type { PropOptionsPage } from './prop-configuration';
export * from './use-cases/source-use-cases';
export * from './use-cases/subscription-use-cases';
export * from './use-cases/webhook-use-cases';
export * from './data-dir-lock';
export { endpointLocation } from './http-request-event';
export type { HttpRequestEvent } from './http-request-event';
export type { EmittedEventContext, StartFromEmitOutcome, WorkflowListenerPort } from './listener-ports';
export * from './use-cases/workflow-use-cases';
export type { WorkflowSseMessage, RunHttpResponse, StartedRun } from './workflow-runner';
export * from './use-cases/app-use-cases';
export type { ResolvedApp } from './app-directory';
export type { BuiltinComponent, BuiltinFailure } from './builtin-registry';
