/** The props of a component for the values configured so far (POST /v1/components/{id}/props/reload); handled by ReloadPropsHandler. */
export class ReloadPropsCommand {
  constructor(readonly accountId: string, readonly componentId: string, readonly configuredProps: Record<string, unknown> | undefined) {}
}
