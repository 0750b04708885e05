import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import { presentDelivery, presentWebhook } from './webhook.presenter';
import {
  CreateWebhookCommand, DeleteWebhookCommand, RecoverDeliveriesCommand, RetryDeliveryCommand, RotateWebhookSecretCommand, UpdateWebhookCommand,
} from './webhooks.commands';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import { RecoverDeliveriesDto, sinceToEpochMs } from './dto/recover-deliveries.dto';

/** Webhooks (API.md "Webhooks") and their deliveries. */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class WebhooksController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('webhooks')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateWebhookDto) {
    const { url, name, description } = input;
    const { id, secret } = await this.commands.execute(new CreateWebhookCommand(req.accountId, url, name, description));
    return { data: { ...presentWebhook(this.queries.ownWebhook(req.accountId, id)), signing_secret: secret } };
  }

  @Get('users/me/webhooks')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.queries.webhooks(req.accountId, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map((r) => presentWebhook(r, { withUser: false })) };
  }

  @Get('webhooks/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: presentWebhook(this.queries.ownWebhook(req.accountId, id)) };
  }

  @Put('webhooks/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateWebhookDto) {
    const changes = { url: input.url, name: input.name, description: input.description, active: input.active };
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
  deliveries(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() pageQuery: PageQueryDto) {
    this.queries.ownWebhook(req.accountId, id);
    const page = this.queries.deliveries(id, pageQuery);
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
  async recover(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: RecoverDeliveriesDto) {
    this.queries.ownWebhook(req.accountId, id);
    const n: number = await this.commands.execute(new RecoverDeliveriesCommand(req.accountId, id, sinceToEpochMs(input.since)));
    return { data: { retried: n } };
  }
}
