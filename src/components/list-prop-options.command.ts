import type { ListPropOptions } from '@app/engine';

/** One page of a prop's options (POST /v1/components/{id}/props/{prop}/options); handled by ListPropOptionsHandler. */
export class ListPropOptionsCommand {
  constructor(readonly accountId: string, readonly componentId: string, readonly prop: string, readonly request: ListPropOptions) {}
}
