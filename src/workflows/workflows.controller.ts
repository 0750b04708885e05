import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { EngineQueries, NotFoundError, WorkflowUseCases } from '@app/engine';
import type { WorkflowRow } from '@app/projections';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { QueryInput, RequestInput } from '../http/request-input.decorator';
import { PageQueryDto } from '../http/page-query.dto';
import { presentRun, presentWorkflow } from './workflow.presenter';
import { CreateWorkflowCommand, DeleteWorkflowCommand, RunWorkflowCommand, UpdateWorkflowCommand } from './workflows.commands';
import { CreateWorkflowDto, RunWorkflowDto, UpdateWorkflowDto } from './dto/save-workflow.dto';

/** Workflows (`p_`) and their runs (API.md "Actions and workflows"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class WorkflowsController {
  constructor(
    @Inject(EngineQueries) private readonly queries: EngineQueries,
    @Inject(CommandBus) private readonly commands: CommandBus,
    @Inject(WorkflowUseCases) private readonly workflows: WorkflowUseCases,
  ) {}

  private own(accountId: string, idOrSlug: string): WorkflowRow {
    return this.queries.ownWorkflow(accountId, idOrSlug);
  }

  private present(accountId: string, id: string) {
    return { data: presentWorkflow(this.own(accountId, id), this.queries.publicUrl) };
  }

  @Post('workflows')
  @HttpCode(200)
  async create(@Req() req: AuthedRequest, @RequestInput() input: CreateWorkflowDto) {
    const id: string = await this.commands.execute(new CreateWorkflowCommand(req.accountId, { ...input }));
    return this.present(req.accountId, id);
  }

  @Get('users/me/workflows')
  list(@Req() req: AuthedRequest, @QueryInput() pageQuery: PageQueryDto) {
    const page = this.queries.workflows.workflows(req.accountId, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map((r) => presentWorkflow(r, this.queries.publicUrl)) };
  }

  @Get('workflows/:id')
  get(@Req() req: AuthedRequest, @Param('id') id: string) {
    const { data } = this.present(req.accountId, id);
    // What it has not run yet (one workflow's GET only: the count reads its pending emits).
    const b = this.workflows.backlog(req.accountId, data.id as string);
    return { data: { ...data, backlog: { runs_waiting: b.runsWaiting, emits_waiting: b.emitsWaiting, full: b.full, max_runs_waiting: b.maxRunsWaiting } } };
  }

  @Put('workflows/:id')
  async update(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: UpdateWorkflowDto) {
    const wid: string = await this.commands.execute(new UpdateWorkflowCommand(req.accountId, id, { ...input }));
    return this.present(req.accountId, wid);
  }

  @Delete('workflows/:id')
  @HttpCode(200)
  async remove(@Req() req: AuthedRequest, @Param('id') id: string) {
    const wid: string = await this.commands.execute(new DeleteWorkflowCommand(req.accountId, id));
    return { data: { id: wid, deleted: true } };
  }

  @Post('workflows/:id/run')
  @HttpCode(200)
  async run(@Req() req: AuthedRequest, @Param('id') id: string, @RequestInput() input: RunWorkflowDto) {
    const runId: string = await this.commands.execute(new RunWorkflowCommand(req.accountId, id, input.event));
    return { data: presentRun(this.queries.workflows.run(runId)!) };
  }

  @Get('workflows/:id/runs')
  runs(@Req() req: AuthedRequest, @Param('id') id: string, @QueryInput() pageQuery: PageQueryDto) {
    const wf = this.own(req.accountId, id);
    const page = this.queries.workflows.runs(wf.id, pageQuery);
    return { page_info: page.pageInfo, data: page.rows.map(presentRun) };
  }

  @Get('workflows/:id/runs/:runId')
  getRun(@Req() req: AuthedRequest, @Param('id') id: string, @Param('runId') runId: string) {
    const wf = this.own(req.accountId, id);
    const run = this.queries.workflows.run(runId);
    if (!run || run.workflow_id !== wf.id) throw new NotFoundError(`run ${runId}`);
    return { data: presentRun(run) };
  }
}
