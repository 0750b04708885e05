import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { SubscriptionRow } from '@app/projections';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { mergeParams, pageParams, stringParam } from '../http/request-params';
import { CreateAutoSubscriptionCommand, CreateSubscriptionCommand, DeleteSubscriptionCommand } from './subscriptions.commands';

function present(row: SubscriptionRow) {
  return { id: row.id, emitter_id: row.emitter_id, listener_id: row.listener_id, event_name: row.event_name, created_at: row.created_at };
}

/** Subscriptions (API.md "Subscriptions"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class SubscriptionsController {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('subscriptions')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const emitterId = stringParam(p, 'emitter_id', true);
    const listenerId = stringParam(p, 'listener_id', true);
    const eventName = stringParam(p, 'event_name') ?? '';
    const id = await this.commands.execute(new CreateSubscriptionCommand(req.accountId, emitterId, listenerId, eventName));
    return { data: present(this.engine.queries.subscription(id)!) };
  }

  @Post('auto_subscriptions')
  @HttpCode(200)
  async createAuto(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const listenerId = stringParam(p, 'listener_id', true);
    const eventName = stringParam(p, 'event_name') ?? '';
    const id = await this.commands.execute(new CreateAutoSubscriptionCommand(req.accountId, listenerId, eventName));
    const row = this.engine.queries.autoSubscriptions(req.accountId).find((a) => a.id === id)!;
    return { data: { id: row.id, listener_id: row.listener_id, event_name: row.event_name, created_at: row.created_at } };
  }

  @Get('users/me/subscriptions')
  list(@Req() req: AuthedRequest, @Query() query: unknown) {
    const page = this.engine.queries.subscriptions(req.accountId, pageParams(mergeParams(query, undefined)));
    return { page_info: page.pageInfo, data: page.rows.map(present) };
  }

  @Get('subscriptions/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = this.engine.queries.subscription(id);
    if (!row || row.account_id !== req.accountId) throw ApiError.notFound(`subscription ${id}`);
    return { data: present(row) };
  }

  @Delete('subscriptions/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    await this.commands.execute(new DeleteSubscriptionCommand(req.accountId, id));
    return { data: { id, deleted: true } };
  }

  @Delete('subscriptions')
  @HttpCode(200)
  async removeByTriple(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const emitterId = stringParam(p, 'emitter_id', true);
    const listenerId = stringParam(p, 'listener_id', true);
    const eventName = stringParam(p, 'event_name') ?? '';
    const row = this.engine.queries.subscriptionByTriple(req.accountId, emitterId, listenerId, eventName);
    if (!row) throw ApiError.notFound(`subscription of ${emitterId} to ${listenerId}${eventName ? ` on ${eventName}` : ''}`);
    await this.commands.execute(new DeleteSubscriptionCommand(req.accountId, row.id));
    return { data: { id: row.id, deleted: true } };
  }
}
