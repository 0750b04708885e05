import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { PropDefinition } from '@app/domain';
import { ComponentUseCases, EngineQueries, PropOptionsPage } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { configurableProps, presentBuiltin, presentComponent } from './component.presenter';
import { SaveComponentCommand } from './components.commands';
import { CreateComponentDto } from './dto/create-component.dto';
import { ListPropOptionsDto } from './dto/list-prop-options.dto';
import { ReloadPropsDto } from './dto/reload-props.dto';
import { SearchComponentsDto } from './dto/search-components.dto';
import { UnpublishComponentDto } from './dto/unpublish-component.dto';
import { UnpublishComponentCommand } from './unpublish-component.command';
import { ListPropOptionsCommand } from './list-prop-options.command';
import { ReloadPropsCommand } from './reload-props.command';

/** Saved components (API.md "Components"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ComponentsController {
  constructor(
    @Inject(EngineQueries) private readonly queries: EngineQueries,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(ComponentUseCases) private readonly components: ComponentUseCases,
  ) {}

  @Post('components')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateComponentDto) {
    // The DTO requires one of the two; the code wins when both are given.
    const { component_code: code, component_url: url, publish } = input;
    const id: string = await this.commands.execute(new SaveComponentCommand(req.accountId, code ? { code } : { url: url! }, publish));
    return { data: presentComponent(this.queries.component(id)!) };
  }

  /**
   * The account's registry: its own published keys and Sluice's built-in components
   * (`builtin: true`); an own key hides a built-in with the same key.
   */
  @Get('components/registry')
  async registry(@Req() req: AuthedRequest) {
    return { data: await this.components.registry(req.accountId) };
  }

  /** One registry key as a component (a built-in has `id: null` and `builtin: true`). */
  @Get('components/registry/:key')
  async registryItem(@Req() req: AuthedRequest, @Param('key') key: string) {
    const item = await this.components.registryItem(req.accountId, key);
    if (item.builtin) return { data: presentBuiltin(item.component) };
    return { data: { ...presentComponent(this.queries.component(item.componentId)!), builtin: false } };
  }

  /**
   * Takes `key` out of the account's registry: the `version` given, or every version. Answers
   * `{data: {unpublished: ["key@version", ...]}}`; nothing published: 404; a built-in key: 409.
   */
  @Delete('components/registry/:key')
  async unpublish(@Req() req: AuthedRequest, @Param('key') key: string, @QueryInput() input: UnpublishComponentDto) {
    const unpublished: string[] = await this.commands.execute(new UnpublishComponentCommand(req.accountId, key, input.version));
    return { data: { unpublished } };
  }

  /** Registry keys (own and built-in) whose key, name or description contains `query`: `{sources, actions}` (compat). */
  @Get('components/search')
  search(@Req() req: AuthedRequest, @QueryInput() input: SearchComponentsDto) {
    return this.components.search(req.accountId, input.query);
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
