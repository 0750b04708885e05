/** Commands of the sources slice. */
export class DeploySourceCommand {
  constructor(
    readonly accountId: string, readonly componentId: string, readonly name: string | undefined,
    readonly configuredProps: Record<string, unknown> | undefined, readonly active: boolean,
  ) {}
}
export class UpdateSourceCommand {
  constructor(
    readonly accountId: string, readonly sourceId: string, readonly componentId: string | undefined, readonly name: string | undefined,
    readonly configuredProps: Record<string, unknown> | undefined, readonly active: boolean | undefined,
  ) {}
}
export class DeleteSourceCommand {
  constructor(readonly accountId: string, readonly sourceId: string, readonly ignoreHookErrors: boolean) {}
}
