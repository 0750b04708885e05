import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import {
  ActionUseCases, AppUseCases, ComponentUseCases, EngineQueries, PropUseCases, SluiceEngine, SourceUseCases, SubscriptionUseCases, WebhookUseCases,
  WorkflowUseCases,
  EndpointUseCases,
} from '@app/engine';
import { ActionsController } from './actions/actions.controller';
import { ACTION_HANDLERS } from './actions/run-action.handler';
import { APP_HANDLERS } from './apps/apps.handlers';
import { AppsController, OAuthCallbackController } from './apps/apps.controller';
import { COMPONENT_HANDLERS } from './components/components.handlers';
import { ComponentsController } from './components/components.controller';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { ApiKeyGuard } from './http/auth.guard';
import { SOURCE_HANDLERS } from './sources/sources.handlers';
import { SourcesController } from './sources/sources.controller';
import { SUBSCRIPTION_HANDLERS } from './subscriptions/subscriptions.handlers';
import { SubscriptionsController } from './subscriptions/subscriptions.controller';
import { UsersController } from './users/users.controller';
import { WEBHOOK_HANDLERS } from './webhooks/webhooks.handlers';
import { WebhooksController } from './webhooks/webhooks.controller';
import { WORKFLOW_HANDLERS } from './workflows/workflows.handlers';
import { WorkflowsController } from './workflows/workflows.controller';

/**
 * The all-in-one server: REST slices over one started engine. Every slice has one shape:
 * controller -> command (CommandBus) -> handler -> one engine use case for writes, and
 * controller -> the engine's query side for reads. Each is given the engine API it uses, never
 * the whole engine.
 */
@Module({})
export class AppModule {
  static forEngine(engine: SluiceEngine): DynamicModule {
    return {
      module: AppModule,
      imports: [CqrsModule.forRoot({ rethrowUnhandled: true })],
      controllers: [
        UsersController, WebhooksController, SubscriptionsController, ComponentsController, SourcesController, WorkflowsController, ActionsController,
        AppsController, OAuthCallbackController,
      ],
      providers: [
        { provide: EngineQueries, useValue: engine.queries },
        { provide: SourceUseCases, useValue: engine.sources },
        { provide: WebhookUseCases, useValue: engine.webhooks },
        { provide: SubscriptionUseCases, useValue: engine.subscriptions },
        { provide: ComponentUseCases, useValue: engine.components },
        { provide: WorkflowUseCases, useValue: engine.workflows },
        { provide: EndpointUseCases, useValue: engine.endpoints },
        { provide: ActionUseCases, useValue: engine.actions },
        { provide: PropUseCases, useValue: engine.props },
        { provide: AppUseCases, useValue: engine.apps },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        ApiKeyGuard,
        ...WEBHOOK_HANDLERS,
        ...SUBSCRIPTION_HANDLERS,
        ...SOURCE_HANDLERS,
        ...COMPONENT_HANDLERS,
        ...WORKFLOW_HANDLERS,
        ...ACTION_HANDLERS,
        ...APP_HANDLERS,
      ],
    };
  }
}
