import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiError } from '../http/api-error';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { boolParam, mergeParams, stringParam } from '../http/request-params';
import { presentComponent } from './component.presenter';
import { SaveComponentCommand } from './components.commands';

/** Saved components (API.md "Components"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ComponentsController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('components')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const code = stringParam(p, 'component_code');
    const url = stringParam(p, 'component_url');
    if (!code && !url) throw ApiError.fields([{ field: 'component_code', message: 'or component_url is required' }]);
    const publish = boolParam(p, 'publish') ?? false;
    const id: string = await this.commands.execute(new SaveComponentCommand(req.accountId, code ? { code } : { url: url! }, publish));
    return { data: presentComponent(this.queries.component(id)!) };
  }

  @Get('components/registry')
  registry(@Req() req: AuthedRequest) {
    return { data: this.queries.registry(req.accountId).map((r) => ({ key: r.key, version: r.version, type: r.type, component_id: r.component_id })) };
  }

  @Get('components/registry/:key')
  registryItem(@Req() req: AuthedRequest, @Param('key') key: string) {
    const entry = this.queries.registryEntry(req.accountId, key);
    return { data: presentComponent(this.queries.component(entry.component_id)!) };
  }

  @Get('components/search')
  search(@Req() req: AuthedRequest, @Query() query: unknown) {
    const q = (stringParam(mergeParams(query, undefined), 'query') ?? '').toLowerCase();
    const hits = this.queries.registry(req.accountId).filter((r) => {
      if (!q) return true;
      const c = this.queries.component(r.component_id)!;
      return [r.key, c.name, c.description ?? ''].some((t) => t.toLowerCase().includes(q));
    });
    return { sources: hits.filter((h) => h.type === 'source').map((h) => h.key), actions: hits.filter((h) => h.type === 'action').map((h) => h.key) };
  }

  @Get('components/:idOrKey')
  get(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string) {
    return { data: presentComponent(this.queries.ownComponent(req.accountId, idOrKey)) };
  }
}
