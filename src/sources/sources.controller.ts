import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import { ComponentSaver } from '../components/component-saver';
import { maskSecrets, presentEventSummary, presentSource } from './source.presenter';
import { DeleteSourceCommand, DeploySourceCommand, UpdateSourceCommand } from './sources.commands';
import { ownSource } from './sources.handlers';
import type { ComponentReference } from './dto/component-reference';
import { DeploySourceDto } from './dto/deploy-source.dto';
import { UpdateSourceDto } from './dto/update-source.dto';
import { DeleteSourceDto } from './dto/delete-source.dto';
import { EventSummariesQueryDto } from './dto/event-summaries-query.dto';
import { ClearEventsDto } from './dto/clear-events.dto';
import { HistoryQueryDto } from './dto/history-query.dto';

/** Sources: deployed components (API.md "Sources"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class SourcesController {
  constructor(
    @Inject(SluiceEngine) private readonly engine: SluiceEngine,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(ComponentSaver) private readonly saver: ComponentSaver,
  ) {}

  private present(id: string) {
    const row = this.engine.queries.source(id);
    if (!row) throw ApiError.notFound(`source ${id}`);
    return presentSource(row, this.engine.component(row.component_id)?.definition, this.engine.config.publicUrl);
  }

  /** Resolves `component_id` / `component_code` / `component_url` / `key` to a saved component of the account. */
  private async componentFrom(accountId: string, ref: ComponentReference): Promise<string | undefined> {
    const id = ref.component_id;
    const code = ref.component_code ?? ref.code;
    const url = ref.component_url;
    const key = ref.key;
    if (id) return id;
    if (code) return this.saver.save(accountId, code);
    if (url) return this.saver.save(accountId, await this.saver.fetchCode(url), 'component_url');
    if (key) {
      // The newest published version of the key, else the newest saved component with it.
      const published = this.engine.queries.registry(accountId).find((r) => r.key === key);
      if (published) return published.component_id;
      const row = this.engine.queries.componentByKey(accountId, key);
      if (!row) throw new ApiError(404, 'not_found', `component with key ${key} not found`, { fields: { key: 'not found' } });
      return row.id;
    }
    return undefined;
  }

  @Post('sources')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: DeploySourceDto) {
    // Every parameter is checked (by the DTO) before the component is saved: a bad one stores nothing.
    const { name, configured_props: props, active } = input;
    // The DTO requires one of the component's references.
    const componentId = (await this.componentFrom(req.accountId, input))!;
    const id = await this.commands.execute(new DeploySourceCommand(req.accountId, componentId, name, props, active));
    return { data: this.present(id) };
  }

  @Get('users/me/sources')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.engine.queries.sources(req.accountId, pageQuery);
    return {
      page_info: page.pageInfo,
      data: page.rows.map((r) => presentSource(r, this.engine.component(r.component_id)?.definition, this.engine.config.publicUrl)),
    };
  }

  @Get('sources/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    return { data: this.present(ownSource(this.engine, req.accountId, id).id) };
  }

  @Put('sources/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateSourceDto) {
    const row = ownSource(this.engine, req.accountId, id);
    const { name, configured_props: props, active } = input;
    const componentId = await this.componentFrom(req.accountId, input);
    await this.commands.execute(new UpdateSourceCommand(req.accountId, row.id, componentId, name, props, active));
    return { data: this.present(row.id) };
  }

  @Delete('sources/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: DeleteSourceDto) {
    const row = ownSource(this.engine, req.accountId, id);
    await this.commands.execute(new DeleteSourceCommand(req.accountId, row.id, input.ignore_hook_errors));
    return { data: { id: row.id, deleted: true } };
  }

  @Post('sources/:id/run')
  @HttpCode(200)
  async runNow(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = ownSource(this.engine, req.accountId, id);
    if (row.status !== 'deployed') throw new ApiError(409, 'conflict', `source ${row.id} is ${row.status}`);
    const outcome = await this.engine.actor(row.id).run('manual', { timestamp: Math.floor(Date.now() / 1000), manual: true });
    if (!outcome) throw new ApiError(409, 'conflict', `source ${row.id} has nothing to run`);
    return {
      data: {
        ok: outcome.result.ok,
        error: outcome.result.error ? { name: outcome.result.error.name, message: outcome.result.error.message } : null,
        emitted: outcome.emitted.map((e) => ({ id: e.summaryId, event: e.event, metadata: { emit_id: e.emitId, name: e.meta.name ?? '', ...e.meta } })),
        logs: outcome.logs,
      },
    };
  }

  @Get('sources/:id/event_summaries')
  eventSummaries(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() input: EventSummariesQueryDto) {
    const row = ownSource(this.engine, req.accountId, id);
    const { limit, event_name: channel } = input;
    const expand = input.expand === 'event';
    const rows = this.engine.queries.sourceEvents(row.id, limit, channel);
    const data = rows.map((r) => presentEventSummary(row.id, {
      summaryId: r.summary_id, ms: r.ms, channel: r.channel, emitId: r.emit_id, event: JSON.parse(r.event), meta: JSON.parse(r.meta),
    }, expand));
    return {
      page_info: {
        total_count: this.engine.queries.sourceEventCount(row.id, channel),
        count: data.length,
        start_cursor: data[0]?.id ?? null,
        end_cursor: data[data.length - 1]?.id ?? null,
      },
      data,
    };
  }

  @Delete('sources/:id/events')
  @HttpCode(202)
  async clearEvents(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: ClearEventsDto) {
    const row = ownSource(this.engine, req.accountId, id);
    const { start_id: startId, end_id: endId } = input;
    await this.engine.actor(row.id).clearEvents(startId, endId, req.accountId);
    await this.engine.settle();
    return { data: { id: row.id } };
  }

  @Get('sources/:id/logs')
  logs(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = ownSource(this.engine, req.accountId, id);
    return {
      data: this.engine.queries.sourceLogs(row.id, 100).map((l) => ({ kind: l.kind, at: l.at, ...(JSON.parse(l.data) as object) })),
    };
  }

  @Get('sources/:id/history')
  async history(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() input: HistoryQueryDto) {
    const row = ownSource(this.engine, req.accountId, id);
    // This list's cursors are stream revisions (its start_cursor / end_cursor).
    const { limit, after } = input;
    const from = after !== undefined ? BigInt(after) + 1n : 0n;
    const events = await this.engine.store.readStream(`source-${row.id}`, { fromRevision: from, maxCount: limit });
    const total = Number(await this.engine.store.streamRevision(`source-${row.id}`)) + 1;
    return {
      page_info: {
        total_count: total, count: events.length,
        start_cursor: events[0] ? String(events[0].revision) : null,
        end_cursor: events.length ? String(events[events.length - 1].revision) : null,
      },
      data: events.map((e) => ({
        type: e.type, at: e.metadata.at, revision: Number(e.revision), position: Number(e.position), actor: e.metadata.actor ?? null,
        data: maskSecrets(e.data),
      })),
    };
  }
}
