import { Controller, Get, Inject, Req, UseGuards } from '@nestjs/common';
import { SluiceEngine } from '@app/engine';
import { ApiKeyGuard, AuthedRequest } from '../http/auth.guard';

/** The calling account. */
@Controller('v1/users')
@UseGuards(ApiKeyGuard)
export class UsersController {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  @Get('me')
  me(@Req() req: AuthedRequest) {
    const a = this.engine.queries.account(req.accountId)!;
    return { data: { id: a.id, name: a.name, created_at: a.created_at } };
  }
}
