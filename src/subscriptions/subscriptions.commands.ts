/** Commands of the subscriptions slice (handled in subscriptions.handlers.ts). */
export class CreateSubscriptionCommand {
  constructor(readonly accountId: string, readonly emitterId: string, readonly listenerId: string, readonly eventName: string) {}
}
export class DeleteSubscriptionCommand {
  constructor(readonly accountId: string, readonly subscriptionId: string) {}
}
export class DeleteSubscriptionByTripleCommand {
  constructor(readonly accountId: string, readonly emitterId: string, readonly listenerId: string, readonly eventName: string) {}
}
export class CreateAutoSubscriptionCommand {
  constructor(readonly accountId: string, readonly listenerId: string, readonly eventName: string) {}
}
