import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiError } from '../http/api-error';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { boolParam, checkUrl, mergeParams, pageParams, stringParam } from '../http/request-params';
import { presentDelivery, presentWebhook } from './webhook.presenter';
import {
  CreateWebhookCommand, DeleteWebhookCommand, RecoverDeliveriesCommand, RetryDeliveryCommand, RotateWebhookSecretCommand, UpdateWebhookCommand,
} from './webhooks.commands';

/** Webhooks (API.md "Webhooks") and their deliveries. */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class WebhooksController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('webhooks')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const url = stringParam(p, 'url', true);
    checkUrl('url', url);
    const name = stringParam(p, 'name', true);
    const description = stringParam(p, 'description') ?? '';
    const { id, secret } = await this.commands.execute(new CreateWebhookCommand(req.accountId, url, name, description));
    return { data: { ...presentWebhook(this.queries.ownWebhook(req.accountId, id)), signing_secret: secret } };
  }

  @Get('users/me/webhooks')
  list(@Req() req: AuthedRequest, @Query() query: unknown) {
    const page = this.queries.webhooks(req.accountId, pageParams(mergeParams(query, undefined)));
    return { page_info: page.pageInfo, data: page.rows.map((r) => presentWebhook(r, { withUser: false })) };
  }

  @Get('webhooks/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: presentWebhook(this.queries.ownWebhook(req.accountId, id)) };
  }

  @Put('webhooks/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const changes = {
      url: stringParam(p, 'url'), name: stringParam(p, 'name'), description: stringParam(p, 'description'), active: boolParam(p, 'active'),
    };
    if (changes.url !== undefined) checkUrl('url', changes.url);
    if (Object.values(changes).every((v) => v === undefined)) {
      throw ApiError.fields([{ field: 'url', message: 'or name, description, active: give at least one to change' }]);
    }
    await this.commands.execute(new UpdateWebhookCommand(req.accountId, id, changes));
    return { data: presentWebhook(this.queries.ownWebhook(req.accountId, id)) };
  }

  @Delete('webhooks/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    await this.commands.execute(new DeleteWebhookCommand(req.accountId, id));
    return { data: { id, deleted: true } };
  }

  @Get('webhooks/:id/secret')
  secret(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: { signing_secret: this.queries.webhookSigningSecret(req.accountId, id) } };
  }

  @Post('webhooks/:id/secret/rotate')
  @HttpCode(200)
  async rotate(@Req() req: AuthedRequest, @Param('id') id: string) {
    const secret = await this.commands.execute(new RotateWebhookSecretCommand(req.accountId, id));
    return { data: { signing_secret: secret } };
  }

  @Get('webhooks/:id/deliveries')
  deliveries(@Req() req: AuthedRequest, @Param('id') id: string, @Query() query: unknown) {
    this.queries.ownWebhook(req.accountId, id);
    const page = this.queries.deliveries(id, pageParams(mergeParams(query, undefined)));
    return { page_info: page.pageInfo, data: page.rows.map(presentDelivery) };
  }

  @Post('webhooks/:id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  async retry(@Req() req: AuthedRequest, @Param('id') id: string, @Param('deliveryId') deliveryId: string) {
    await this.commands.execute(new RetryDeliveryCommand(req.accountId, id, deliveryId));
    return { data: presentDelivery(this.queries.delivery(deliveryId)!) };
  }

  @Post('webhooks/:id/recover')
  @HttpCode(202)
  async recover(@Req() req: AuthedRequest, @Param('id') id: string, @Query() query: unknown, @Body() body: unknown) {
    this.queries.ownWebhook(req.accountId, id);
    const p = mergeParams(query, body);
    const sinceRaw = stringParam(p, 'since', true);
    const since = /^\d+$/.test(sinceRaw) ? Number(sinceRaw) * (sinceRaw.length <= 10 ? 1000 : 1) : Date.parse(sinceRaw);
    if (!Number.isFinite(since)) throw ApiError.fields([{ field: 'since', message: 'must be epoch seconds, epoch milliseconds or an ISO date' }]);
    const n: number = await this.commands.execute(new RecoverDeliveriesCommand(req.accountId, id, since));
    return { data: { retried: n } };
  }
}
