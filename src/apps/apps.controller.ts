import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Redirect, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { presentApp, presentConnectedAccount } from './app.presenter';
import {
  CompleteOAuthCommand, ConnectAccountCommand, DeleteConnectedAccountCommand, RegisterAppCommand, StartOAuthCommand, UpdateConnectedAccountCommand,
} from './apps.commands';
import { ConnectAccountDto } from './dto/connect-account.dto';
import { ListAccountsDto } from './dto/list-accounts.dto';
import { OAuthCallbackDto } from './dto/oauth-callback.dto';
import { OAuthStartDto } from './dto/oauth-start.dto';
import { RegisterAppDto } from './dto/register-app.dto';
import { UpdateAccountDto } from './dto/update-account.dto';

/** Apps and connected accounts (API.md "Apps and connected accounts"); every route needs an API key. */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class AppsController {
  constructor(
    @Inject(EngineQueries) private readonly queries: EngineQueries,
    @Inject(CommandBus) private readonly commands: CommandBus,
  ) {}

  @Get('apps')
  list(@Req() req: AuthedRequest) {
    return { data: this.queries.visibleApps(req.accountId).map(presentApp) };
  }

  @Post('apps')
  @HttpCode(200)
  async register(@Req() req: AuthedRequest, @RequestInput() input: RegisterAppDto) {
    const app = await this.commands.execute(new RegisterAppCommand(req.accountId, { ...input }));
    return { data: presentApp(app) };
  }

  /** Redirects the user's browser to the provider's consent page. */
  @Get('apps/:slug/oauth/start')
  @Redirect()
  async oauthStart(@Req() req: AuthedRequest, @Param('slug') slug: string, @QueryInput() input: OAuthStartDto) {
    const url: string = await this.commands.execute(new StartOAuthCommand(req.accountId, slug, input.name, input.account));
    return { url, statusCode: 302 };
  }

  @Post('accounts')
  @HttpCode(200)
  async connect(@Req() req: AuthedRequest, @RequestInput() input: ConnectAccountDto) {
    const id: string = await this.commands.execute(new ConnectAccountCommand(req.accountId, { app: input.app, name: input.name, credentials: input.credentials }));
    return { data: presentConnectedAccount(this.queries.ownConnectedAccount(req.accountId, id)) };
  }

  @Get('users/me/accounts')
  listAccounts(@Req() req: AuthedRequest, @QueryInput() input: ListAccountsDto) {
    return { data: this.queries.apps.connectedAccounts(req.accountId, input.app).map(presentConnectedAccount) };
  }

  @Get('accounts/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: presentConnectedAccount(this.queries.ownConnectedAccount(req.accountId, id)) };
  }

  @Put('accounts/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateAccountDto) {
    await this.commands.execute(new UpdateConnectedAccountCommand(req.accountId, id, input.name, input.credentials));
    return { data: presentConnectedAccount(this.queries.ownConnectedAccount(req.accountId, id)) };
  }

  @Delete('accounts/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    await this.commands.execute(new DeleteConnectedAccountCommand(req.accountId, id));
    return { data: { id, deleted: true } };
  }
}

/**
 * The OAuth redirect target. No API key: the user's browser arrives from the provider, and the
 * sealed `state` (bound to the account, app and name, expiring) is what authenticates it.
 */
@Controller('v1/oauth')
export class OAuthCallbackController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Get('callback')
  async callback(@QueryInput() input: OAuthCallbackDto) {
    const { accountId, id } = await this.commands.execute(new CompleteOAuthCommand({ code: input.code, state: input.state, error: input.error }));
    return { data: presentConnectedAccount(this.queries.ownConnectedAccount(accountId, id)) };
  }
}
