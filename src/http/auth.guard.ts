import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { hashApiKey, SluiceEngine } from '@app/engine';

/** The request after authentication: the caller's account id. */
export type AuthedRequest = FastifyRequest & { accountId: string };

/** The account of an `Authorization: Bearer <key>` header; a missing or unknown key is a 401 ApiError. */
export function accountFromAuthorization(engine: SluiceEngine, header: string | undefined): string {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) throw new ApiError(401, 'unauthorized', 'missing Authorization: Bearer <api key>');
  const accountId = engine.queries.accountIdForKeyHash(hashApiKey(m[1]));
  if (!accountId) throw new ApiError(401, 'unauthorized', 'invalid API key');
  return accountId;
}

/** Bearer API key on every `/v1` route; a missing or unknown key is a 401. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    req.accountId = accountFromAuthorization(this.engine, req.headers.authorization);
    return true;
  }
}
