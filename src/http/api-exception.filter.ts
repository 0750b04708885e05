import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { WrongExpectedRevisionError } from '@app/event-store';
import { ApiError } from '../engine/api-error';

/** The API's error body: `{error, code, details?}`; never a stack trace. */
export function errorBody(err: unknown): { status: number; body: { error: string; code: string; details?: Record<string, unknown> } } {
  if (err instanceof ApiError) return { status: err.status, body: { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) } };
  if (err instanceof WrongExpectedRevisionError) {
    return { status: 409, body: { error: 'the resource was changed concurrently; retry', code: 'conflict' } };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    return { status, body: { error: err.message, code: status === 404 ? 'not_found' : 'http_error' } };
  }
  const fe = err as { statusCode?: number; code?: string; message?: string; name?: string };
  if (fe && typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const code = fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'payload_too_large'
      : fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'unsupported_media_type'
      : fe.statusCode === 400 ? 'invalid_json' : 'bad_request';
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
