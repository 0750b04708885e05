import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { WrongExpectedRevisionError } from '@app/event-store';
import { ApiError } from './api-error';

const STATUS_CODES: Record<number, string> = {
  400: 'invalid_request', 401: 'unauthorized', 404: 'not_found', 405: 'method_not_allowed', 409: 'conflict',
  413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited', 503: 'store_unavailable',
};

/** The API's error body: `{error, code, details?}`; never a stack trace. */
export function errorBody(err: unknown): { status: number; body: { error: string; code: string; details?: Record<string, unknown> } } {
  if (err instanceof ApiError) return { status: err.status, body: { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) } };
  if (err instanceof WrongExpectedRevisionError) {
    return { status: 409, body: { error: 'the resource was changed concurrently; retry', code: 'conflict' } };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    return { status, body: { error: err.message, code: STATUS_CODES[status] ?? (status < 500 ? 'bad_request' : 'internal') } };
  }
  const fe = err as { statusCode?: number; code?: string; message?: string; name?: string };
  if (fe && typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const code = fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'invalid_json'
      : STATUS_CODES[fe.statusCode] ?? 'bad_request';
    return { status: fe.statusCode, body: { error: fe.message ?? 'bad request', code } };
  }
  if (fe && (fe.name === 'StoreUnavailableError' || fe.code === 'store_unavailable' || fe.code === 'SQLITE_FULL' || fe.code === 'SQLITE_BUSY')) {
    return { status: 503, body: { error: 'the store cannot take writes now; retry later', code: 'store_unavailable' } };
  }
  console.error('unexpected error', err);
  return { status: 500, body: { error: 'internal error', code: 'internal' } };
}

/** Maps every error to the API error shape. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { status, body } = errorBody(exception);
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
