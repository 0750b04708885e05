import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { ApiError } from '../engine/api-error';
import { SluiceEngine } from '../engine/sluice-engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { mergeParams, stringParam } from '../http/request-params';
import { ComponentSaver } from './component-saver';
import { presentComponent } from './component.presenter';

/** Saved components (API.md "Components"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ComponentsController {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine, @Inject(ComponentSaver) private readonly saver: ComponentSaver) {}

  @Post('components')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @Query() query: unknown, @Body() body: unknown) {
    const p = mergeParams(query, body);
    const code = stringParam(p, 'component_code');
    const url = stringParam(p, 'component_url');
    if (!code && !url) throw ApiError.fields([{ field: 'component_code', message: 'or component_url is required' }]);
    const id = code ? await this.saver.save(req.accountId, code) : await this.saver.save(req.accountId, await this.saver.fetchCode(url!), 'component_url');
    return { data: presentComponent(this.engine.queries.component(id)!) };
  }

  @Get('components/:idOrKey')
  get(@Req() req: AuthedRequest, @Param('idOrKey') idOrKey: string) {
    const row = idOrKey.startsWith('sc_') ? this.engine.queries.component(idOrKey) : this.engine.queries.componentByKey(req.accountId, idOrKey);
    if (!row || row.account_id !== req.accountId) throw ApiError.notFound(`component ${idOrKey}`);
    return { data: presentComponent(row) };
  }
}
