import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { SubscriptionUseCases } from '@app/engine';
import {
  CreateAutoSubscriptionCommand, CreateSubscriptionCommand, DeleteSubscriptionByTripleCommand, DeleteSubscriptionCommand,
} from './subscriptions.commands';

@CommandHandler(CreateSubscriptionCommand)
export class CreateSubscriptionHandler implements ICommandHandler<CreateSubscriptionCommand, string> {
  constructor(@Inject(SubscriptionUseCases) private readonly subscriptions: SubscriptionUseCases) {}
  execute(c: CreateSubscriptionCommand): Promise<string> {
    return this.subscriptions.create(c.accountId, { emitterId: c.emitterId, listenerId: c.listenerId, eventName: c.eventName });
  }
}

@CommandHandler(DeleteSubscriptionCommand)
export class DeleteSubscriptionHandler implements ICommandHandler<DeleteSubscriptionCommand, void> {
  constructor(@Inject(SubscriptionUseCases) private readonly subscriptions: SubscriptionUseCases) {}
  execute(c: DeleteSubscriptionCommand): Promise<void> {
    return this.subscriptions.delete(c.accountId, c.subscriptionId);
  }
}

@CommandHandler(DeleteSubscriptionByTripleCommand)
export class DeleteSubscriptionByTripleHandler implements ICommandHandler<DeleteSubscriptionByTripleCommand, string> {
  constructor(@Inject(SubscriptionUseCases) private readonly subscriptions: SubscriptionUseCases) {}
  execute(c: DeleteSubscriptionByTripleCommand): Promise<string> {
    return this.subscriptions.deleteByTriple(c.accountId, { emitterId: c.emitterId, listenerId: c.listenerId, eventName: c.eventName });
  }
}

@CommandHandler(CreateAutoSubscriptionCommand)
export class CreateAutoSubscriptionHandler implements ICommandHandler<CreateAutoSubscriptionCommand, string> {
  constructor(@Inject(SubscriptionUseCases) private readonly subscriptions: SubscriptionUseCases) {}
  execute(c: CreateAutoSubscriptionCommand): Promise<string> {
    return this.subscriptions.createAuto(c.accountId, { listenerId: c.listenerId, eventName: c.eventName });
  }
}

export const SUBSCRIPTION_HANDLERS = [
  CreateSubscriptionHandler, DeleteSubscriptionHandler, DeleteSubscriptionByTripleHandler, CreateAutoSubscriptionHandler,
];
