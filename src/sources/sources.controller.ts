import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiError } from '../http/api-error';
import { ComponentRef, EndpointUseCases, EngineQueries, RunOutcome } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import { maskSecrets, presentEventSummary, presentSource } from './source.presenter';
import {
  ClearSourceEventsCommand, DeleteSourceCommand, DeploySourceCommand, RunSourceNowCommand, UpdateSourceCommand,
} from './sources.commands';
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
    @Inject(EngineQueries) private readonly queries: EngineQueries,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(EndpointUseCases) private readonly endpoints: EndpointUseCases,
  ) {}

  private present(id: string) {
    const row = this.queries.source(id);
    if (!row) throw ApiError.notFound(`source ${id}`);
    return presentSource(row, this.queries.componentDefinition(row.component_id), this.queries.publicUrl);
  }

  /** `component_id` / `component_code` (or `code`) / `component_url` / `key`: the engine resolves them to a saved component. */
  private componentRef(ref: ComponentReference): ComponentRef {
    return { id: ref.component_id, code: ref.component_code ?? ref.code, url: ref.component_url, key: ref.key };
  }

  @Post('sources')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: DeploySourceDto) {
    // Every parameter is checked (by the DTO) before the component is saved: a bad one stores nothing.
    const { name, configured_props: props, active } = input;
    const component = this.componentRef(input);
    const id: string = await this.commands.execute(new DeploySourceCommand(req.accountId, { component, name, configuredProps: props, active }));
    return { data: this.present(id) };
  }

  @Get('users/me/sources')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.queries.sources(req.accountId, pageQuery);
    return {
      page_info: page.pageInfo,
      data: page.rows.map((r) => presentSource(r, this.queries.componentDefinition(r.component_id), this.queries.publicUrl)),
    };
  }

  @Get('sources/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    const sourceId = this.queries.ownSource(req.accountId, id).id;
    // Requests its endpoint took that have not run yet (full: the next gets a 429), and emits it
    // listens to that wait in the log (a listening source holds 32 dispatches at most; one
    // source's GET only: the count reads its pending rows).
    const w = this.endpoints.backlog(sourceId);
    const backlog = {
      runs_waiting: w.runs, bytes_waiting: w.bytes, full: w.full, max_runs_waiting: w.maxRuns, max_bytes_waiting: w.maxBytes,
      emits_waiting: this.queries.pendingListenerDispatchCount(sourceId),
    };
    return { data: { ...this.present(sourceId), backlog } };
  }

  @Put('sources/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateSourceDto) {
    const row = this.queries.ownSource(req.accountId, id);
    const { name, configured_props: props, active } = input;
    const component = this.componentRef(input);
    await this.commands.execute(new UpdateSourceCommand(req.accountId, row.id, { component, name, configuredProps: props, active }));
    return { data: this.present(row.id) };
  }

  @Delete('sources/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: DeleteSourceDto) {
    const row = this.queries.ownSource(req.accountId, id);
    await this.commands.execute(new DeleteSourceCommand(req.accountId, row.id, input.ignore_hook_errors));
    return { data: { id: row.id, deleted: true } };
  }

  @Post('sources/:id/run')
  @HttpCode(200)
  async runNow(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = this.queries.ownSource(req.accountId, id);
    const outcome: RunOutcome = await this.commands.execute(new RunSourceNowCommand(req.accountId, row.id));
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
    const row = this.queries.ownSource(req.accountId, id);
    const { limit, event_name: channel } = input;
    const expand = input.expand === 'event';
    const rows = this.queries.sourceEvents(row.id, limit, channel);
    const data = rows.map((r) => presentEventSummary(row.id, {
      summaryId: r.summary_id, ms: r.ms, channel: r.channel, emitId: r.emit_id, event: JSON.parse(r.event), meta: JSON.parse(r.meta),
    }, expand));
    return {
      page_info: {
        total_count: this.queries.sourceEventCount(row.id, channel),
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
    const row = this.queries.ownSource(req.accountId, id);
    const { start_id: startId, end_id: endId } = input;
    await this.commands.execute(new ClearSourceEventsCommand(req.accountId, row.id, startId, endId));
    return { data: { id: row.id } };
  }

  @Get('sources/:id/logs')
  logs(@Req() req: AuthedRequest, @Param('id') id: string) {
    const row = this.queries.ownSource(req.accountId, id);
    return {
      data: this.queries.sourceLogs(row.id, 100).map((l) => ({ kind: l.kind, at: l.at, ...l.data })),
    };
  }

  @Get('sources/:id/history')
  async history(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() input: HistoryQueryDto) {
    const row = this.queries.ownSource(req.accountId, id);
    // This list's cursors are stream revisions (its start_cursor / end_cursor).
    const { limit, after } = input;
    const from = after !== undefined ? BigInt(after) + 1n : 0n;
    const { events, total } = await this.queries.sourceHistory(req.accountId, row.id, from, limit);
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
