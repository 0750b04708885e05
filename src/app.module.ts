import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { ComponentSaver } from './components/component-saver';
import { ComponentsController } from './components/components.controller';
import { SluiceEngine } from '@app/engine';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { ApiKeyGuard } from './http/auth.guard';
import { SOURCE_HANDLERS } from './sources/sources.handlers';
import { SourcesController } from './sources/sources.controller';
import { SUBSCRIPTION_HANDLERS } from './subscriptions/subscriptions.handlers';
import { SubscriptionsController } from './subscriptions/subscriptions.controller';
import { UsersController } from './users/users.controller';
import { WEBHOOK_HANDLERS } from './webhooks/webhooks.handlers';
import { WebhooksController } from './webhooks/webhooks.controller';

/** The all-in-one server: REST slices over one started engine. */
@Module({})
export class AppModule {
  static forEngine(engine: SluiceEngine): DynamicModule {
    return {
      module: AppModule,
      imports: [CqrsModule.forRoot({ rethrowUnhandled: true })],
      controllers: [UsersController, WebhooksController, SubscriptionsController, ComponentsController, SourcesController],
      providers: [
        { provide: SluiceEngine, useValue: engine },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        ApiKeyGuard,
        ComponentSaver,
        ...WEBHOOK_HANDLERS,
        ...SUBSCRIPTION_HANDLERS,
        ...SOURCE_HANDLERS,
      ],
    };
  }
}
