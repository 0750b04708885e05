import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './api-error';
import { EngineQueries } from '@app/engine';

/** The request after authentication: the caller's account id. */
export type AuthedRequest = FastifyRequest & { accountId: string };

/** The account of an `Authorization: Bearer <key>` header; a missing or unknown key is a 401 ApiError. */
export function accountFromAuthorization(queries: EngineQueries, header: string | undefined): string {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) throw new ApiError(401, 'unauthorized', 'missing Authorization: Bearer <api key>');
  const accountId = queries.accountForApiKey(m[1]);
  if (!accountId) throw new ApiError(401, 'unauthorized', 'invalid API key');
  return accountId;
}

/** Bearer API key on every `/v1` route; a missing or unknown key is a 401. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(@Inject(EngineQueries) private readonly queries: EngineQueries) {}

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    req.accountId = accountFromAuthorization(this.queries, req.headers.authorization);
    return true;
  }
}
