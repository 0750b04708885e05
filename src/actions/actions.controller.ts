import { Controller, HttpCode, Inject, Post, Req, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { ActionRunOutcome } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';
import { RequestInput } from '../http/request-input.decorator';
import { presentActionRun } from './action-run.presenter';
import { RunActionDto } from './dto/run-action.dto';
import { RunActionCommand } from './run-action.command';

/** Running actions (API.md "Actions and workflows"). */
@Controller('v1')
@UseGuards(ApiKeyGuard)
export class ActionsController {
  constructor(@Inject(CommandBus) private readonly commands: CommandBus) {}

  /**
   * Runs an action once. A run whose code fails is still a 200: the request was served, and the
   * error is in `os` with `ok: false` (as the original answers). Bad props are a 400, an error named
   * `ConfigurationError` a 400 `configuration_error`.
   */
  @Post('actions/run')
  @HttpCode(200)
  async run(@Req() req: AuthedRequest, @RequestInput() input: RunActionDto) {
    const component = { id: input.component_id, code: input.component_code ?? input.code, url: input.component_url, key: input.key };
    const outcome: ActionRunOutcome = await this.commands.execute(new RunActionCommand(req.accountId, { component, configuredProps: input.configured_props }));
    return { data: presentActionRun(outcome) };
  }
}
