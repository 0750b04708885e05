/** `DELETE /v1/components/registry/{key}`: takes one version of a key, or all of them, out of the account's registry. */
export class UnpublishComponentCommand {
  constructor(readonly accountId: string, readonly key: string, readonly version: string | undefined) {}
}
