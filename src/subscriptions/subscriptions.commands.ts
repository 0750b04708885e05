/** Commands of the subscriptions slice. */
export class CreateSubscriptionCommand {
  constructor(readonly accountId: string, readonly emitterId: string, readonly listenerId: string, readonly eventName: string) {}
}
export class DeleteSubscriptionCommand {
  constructor(readonly accountId: string, readonly subscriptionId: string, readonly reason?: string) {}
}
export class CreateAutoSubscriptionCommand {
  constructor(readonly accountId: string, readonly listenerId: string, readonly eventName: string) {}
}
