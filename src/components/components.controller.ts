import { Controller, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { PropDefinition } from '@app/domain';
import { EngineQueries, PropOptionsPage } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { configurableProps, presentComponent } from './component.presenter';
import { SaveComponentCommand } from './components.commands';
import { CreateComponentDto } from './dto/create-component.dto';
import { ListPropOptionsDto } from './dto/list-prop-options.dto';
import { ReloadPropsDto } from './dto/reload-props.dto';
import { SearchComponentsDto } from './dto/search-components.dto';
import { ListPropOptionsCommand } from './list-prop-options.command';
import { ReloadPropsCommand } from './reload-props.command';

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

  /**
   * One page of a prop's options, run in the sandbox for the props configured so far:
   * `{data: {options, context}}`. Unknown component or prop: 404; a `ConfigurationError`: 400
   * `configuration_error`; any other failure of the code (a throw, a limit): 400 `component_failed`.
   */
  @Post('components/:idOrKey/props/:prop/options')
  @HttpCode(200)
  async propOptions(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string, @Param('prop') prop: string, @RequestInput() input: ListPropOptionsDto) {
    const page: PropOptionsPage = await this.commands.execute(new ListPropOptionsCommand(req.accountId, idOrKey, prop, {
      configuredProps: input.configured_props, page: input.page, prevContext: input.prev_context, query: input.query,
    }));
    return { data: { options: page.options, context: page.context } };
  }

  /** The props after `additionalProps()` ran for the values configured so far: `{data: {configurable_props}}`, static and added. */
  @Post('components/:idOrKey/props/reload')
  @HttpCode(200)
  async reloadProps(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string, @RequestInput() input: ReloadPropsDto) {
    const props: PropDefinition[] = await this.commands.execute(new ReloadPropsCommand(req.accountId, idOrKey, input.configured_props));
    const def = this.queries.ownComponent(req.accountId, idOrKey);
    return { data: { configurable_props: configurableProps({ ...JSON.parse(def.definition), props }) } };
  }

  @Get('components/:idOrKey')
  get(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string) {
    return { data: presentComponent(this.queries.ownComponent(req.accountId, idOrKey)) };
  }
}
