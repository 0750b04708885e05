import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { SubscriptionRow } from '@app/projections';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import {
  CreateAutoSubscriptionCommand, CreateSubscriptionCommand, DeleteSubscriptionByTripleCommand, DeleteSubscriptionCommand,
} from './subscriptions.commands';
import { SubscriptionTripleDto } from './dto/subscription-triple.dto';
import { CreateAutoSubscriptionDto } from './dto/create-auto-subscription.dto';

function present(row: SubscriptionRow) {
  return { id: row.id, emitter_id: row.emitter_id, listener_id: row.listener_id, event_name: row.event_name, created_at: row.created_at };
}

/** Subscriptions (API.md "Subscriptions"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class SubscriptionsController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('subscriptions')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: SubscriptionTripleDto) {
    const { emitter_id: emitterId, listener_id: listenerId, event_name: eventName } = input;
    const id: string = await this.commands.execute(new CreateSubscriptionCommand(req.accountId, emitterId, listenerId, eventName));
    return { data: present(this.queries.subscription(id)!) };
  }

  @Post('auto_subscriptions')
  @HttpCode(200)
  async createAuto(@Req() req: AuthedRequest, @RequestInput() input: CreateAutoSubscriptionDto) {
    const { listener_id: listenerId, event_name: eventName } = input;
    const id: string = await this.commands.execute(new CreateAutoSubscriptionCommand(req.accountId, listenerId, eventName));
    const row = this.queries.autoSubscriptions(req.accountId).find((a) => a.id === id)!;
    return { data: { id: row.id, listener_id: row.listener_id, event_name: row.event_name, created_at: row.created_at } };
  }

  @Get('users/me/subscriptions')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.queries.subscriptions(req.accountId, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map(present) };
  }

  @Get('subscriptions/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: present(this.queries.ownSubscription(req.accountId, id)) };
  }

  @Delete('subscriptions/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    await this.commands.execute(new DeleteSubscriptionCommand(req.accountId, id));
    return { data: { id, deleted: true } };
  }

  @Delete('subscriptions')
  @HttpCode(200)
  async removeByTriple(@Req() req: AuthedRequest, @RequestInput() input: SubscriptionTripleDto) {
    const { emitter_id: emitterId, listener_id: listenerId, event_name: eventName } = input;
    const deleted: string = await this.commands.execute(new DeleteSubscriptionByTripleCommand(req.accountId, emitterId, listenerId, eventName));
    return { data: { id: deleted, deleted: true } };
  }
}
