import { Controller, Get, Inject, Req, UseGuards } from '@nestjs/common';
import { EngineQueries } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';

/** The calling account. */
@Controller('v1/users')
@UseGuards(ApiKeyGuard)
export class UsersController {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries) {}

  @Get('me')
  me(@Req() req: AuthedRequest) {
    const a = this.queries.account(req.accountId)!;
    return { data: { id: a.id, name: a.name, created_at: a.created_at } };
  }
}
