import { Controller, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { presentComponent } from './component.presenter';
import { SaveComponentCommand } from './components.commands';
import { CreateComponentDto } from './dto/create-component.dto';
import { SearchComponentsDto } from './dto/search-components.dto';

/** Saved components (API.md "Components"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ComponentsController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries, @Inject(CommandBus) private readonly commands: CommandBus) {}

  @Post('components')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateComponentDto) {
    // The DTO requires one of the two; the code wins when both are given.
    const { component_code: code, component_url: url, publish } = input;
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
  search(@Req() req: AuthedRequest, @QueryInput() input: SearchComponentsDto) {
    const q = input.query.toLowerCase();
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
