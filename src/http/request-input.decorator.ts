import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { InputValidationPipe } from './input-validation.pipe';
import { mergeParams } from './request-params';

const mergedParams = createParamDecorator((_data: unknown, ctx: ExecutionContext) => {
  const req = ctx.switchToHttp().getRequest<FastifyRequest>();
  return mergeParams(req.query, req.body);
});

const queryParams = createParamDecorator((_data: unknown, ctx: ExecutionContext) => {
  const req = ctx.switchToHttp().getRequest<FastifyRequest>();
  return mergeParams(req.query, undefined);
});

const validation = new InputValidationPipe();

/**
 * The request's parameters from the query string and the JSON body (API.md: either may carry
 * them; the body wins), validated into the parameter's DTO class. A body that is not an object
 * is a 400 `invalid_body`.
 */
export function RequestInput(): ParameterDecorator {
  return mergedParams(undefined, validation);
}

/** The query string's parameters, validated into the parameter's DTO class (lists and reads). */
export function QueryInput(): ParameterDecorator {
  return queryParams(undefined, validation);
}
