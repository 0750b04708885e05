import type { DeploySource, UpdateSource } from '@app/engine';

/** Commands of the sources slice (handled in sources.handlers.ts). */
export class DeploySourceCommand {
  constructor(readonly accountId: string, readonly source: DeploySource) {}
}
export class UpdateSourceCommand {
  constructor(readonly accountId: string, readonly sourceId: string, readonly changes: UpdateSource) {}
}
export class DeleteSourceCommand {
  constructor(readonly accountId: string, readonly sourceId: string, readonly ignoreHookErrors: boolean) {}
}
export class RunSourceNowCommand {
  constructor(readonly accountId: string, readonly sourceId: string) {}
}
export class ClearSourceEventsCommand {
  constructor(readonly accountId: string, readonly sourceId: string, readonly startId?: string, readonly endId?: string) {}
}
