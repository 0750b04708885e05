import type { ComponentCode } from '@app/engine';

/** Commands of the components slice (handled in components.handlers.ts). */
export class SaveComponentCommand {
  constructor(readonly accountId: string, readonly from: ComponentCode, readonly publish: boolean) {}
}
