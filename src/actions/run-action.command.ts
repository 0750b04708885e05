import type { RunAction } from '@app/engine';

/** Runs an action once (POST /v1/actions/run); handled by RunActionHandler. */
export class RunActionCommand {
  constructor(readonly accountId: string, readonly action: RunAction) {}
}
