import { Controller, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { ComponentSaver } from './component-saver';
import { presentComponent } from './component.presenter';
import { CreateComponentDto } from './dto/create-component.dto';
import { SearchComponentsDto } from './dto/search-components.dto';

/** Saved components (API.md "Components"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ComponentsController {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine, @Inject(ComponentSaver) private readonly saver: ComponentSaver) {}

  @Post('components')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateComponentDto) {
    // The DTO requires one of the two.
    const { component_code: code, component_url: url, publish } = input;
    const id = code
      ? await this.saver.save(req.accountId, code, 'component_code', publish)
      : await this.saver.save(req.accountId, await this.saver.fetchCode(url!), 'component_url', publish);
    return { data: presentComponent(this.engine.queries.component(id)!) };
  }

  @Get('components/registry')
  registry(@Req() req: AuthedRequest) {
    return { data: this.engine.queries.registry(req.accountId).map((r) => ({ key: r.key, version: r.version, type: r.type, component_id: r.component_id })) };
  }

  @Get('components/registry/:key')
  registryItem(@Req() req: AuthedRequest, @Param('key') key: string) {
    const entry = this.engine.queries.registry(req.accountId).find((r) => r.key === key);
    if (!entry) throw ApiError.notFound(`registry component ${key}`);
    return { data: presentComponent(this.engine.queries.component(entry.component_id)!) };
  }

  @Get('components/search')
  search(@Req() req: AuthedRequest, @QueryInput() input: SearchComponentsDto) {
    const q = input.query.toLowerCase();
    const hits = this.engine.queries.registry(req.accountId).filter((r) => {
      if (!q) return true;
      const c = this.engine.queries.component(r.component_id)!;
      return [r.key, c.name, c.description ?? ''].some((t) => t.toLowerCase().includes(q));
    });
    return { sources: hits.filter((h) => h.type === 'source').map((h) => h.key), actions: hits.filter((h) => h.type === 'action').map((h) => h.key) };
  }

  @Get('components/:idOrKey')
  get(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string) {
    const row = idOrKey.startsWith('sc_') ? this.engine.queries.component(idOrKey) : this.engine.queries.componentByKey(req.accountId, idOrKey);
    if (!row || row.account_id !== req.accountId) throw ApiError.notFound(`component ${idOrKey}`);
    return { data: presentComponent(row) };
  }
}
