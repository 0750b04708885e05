import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { SealedSecret } from '@app/domain';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import { presentDelivery, presentWebhook } from './webhook.presenter';
import {
  CreateWebhookCommand, DeleteWebhookCommand, RetryDeliveriesCommand, RotateWebhookSecretCommand, UpdateWebhookCommand,
} from './webhooks.commands';
import { ownWebhook } from './webhooks.handlers';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { UpdateWebhookDto } from './dto/update-webhook.dto';
import { RecoverDeliveriesDto, sinceToEpochMs } from './dto/recover-deliveries.dto';

/** Webhooks (API.md "Webhooks") and their deliveries. */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class WebhooksController {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('webhooks')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateWebhookDto) {
    const { url, name, description } = input;
    const { id, secret } = await this.commands.execute(new CreateWebhookCommand(req.accountId, url, name, description));
    return { data: { ...presentWebhook(ownWebhook(this.engine, req.accountId, id)), signing_secret: secret } };
  }

  @Get('users/me/webhooks')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.engine.queries.webhooks(req.accountId, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map((r) => presentWebhook(r, { withUser: false })) };
  }

  @Get('webhooks/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: presentWebhook(ownWebhook(this.engine, req.accountId, id)) };
  }

  @Put('webhooks/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateWebhookDto) {
    const changes = { url: input.url, name: input.name, description: input.description, active: input.active };
    await this.commands.execute(new UpdateWebhookCommand(req.accountId, id, changes));
    return { data: presentWebhook(ownWebhook(this.engine, req.accountId, id)) };
  }

  @Delete('webhooks/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    await this.commands.execute(new DeleteWebhookCommand(req.accountId, id));
    return { data: { id, deleted: true } };
  }

  @Get('webhooks/:id/secret')
  secret(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = ownWebhook(this.engine, req.accountId, id);
    return { data: { signing_secret: this.engine.box.open(JSON.parse(row.secret) as SealedSecret) } };
  }

  @Post('webhooks/:id/secret/rotate')
  @HttpCode(200)
  async rotate(@Req() req: AuthedRequest, @Param('id') id: string) {
    const secret = await this.commands.execute(new RotateWebhookSecretCommand(req.accountId, id));
    return { data: { signing_secret: secret } };
  }

  @Get('webhooks/:id/deliveries')
  deliveries(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() pageQuery: PageQueryDto) {
    ownWebhook(this.engine, req.accountId, id);
    const page = this.engine.queries.deliveries(id, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map(presentDelivery) };
  }

  @Post('webhooks/:id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  async retry(@Req() req: AuthedRequest, @Param('id') id: string, @Param('deliveryId') deliveryId: string) {
    ownWebhook(this.engine, req.accountId, id);
    const row = this.engine.queries.delivery(deliveryId);
    if (!row || row.webhook_id !== id) throw ApiError.notFound(`delivery ${deliveryId}`);
    if (row.status === 'delivered' || row.status === 'pending') {
      throw new ApiError(409, 'conflict', `delivery ${deliveryId} is ${row.status}; only failed or exhausted deliveries can be retried`);
    }
    await this.commands.execute(new RetryDeliveriesCommand(req.accountId, id, [deliveryId]));
    return { data: presentDelivery(this.engine.queries.delivery(deliveryId)!) };
  }

  @Post('webhooks/:id/recover')
  @HttpCode(202)
  async recover(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: RecoverDeliveriesDto) {
    ownWebhook(this.engine, req.accountId, id);
    const since = sinceToEpochMs(input.since);
    const rows = this.engine.queries.failedDeliveriesSince(id, since);
    const n = await this.commands.execute(new RetryDeliveriesCommand(req.accountId, id, rows.map((r) => r.id)));
    return { data: { retried: n } };
  }
}
