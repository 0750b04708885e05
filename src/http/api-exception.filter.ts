import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { WrongExpectedRevisionError } from '@app/event-store';
import {
  ApiKeyInUseError, ComponentCallFailedError, ComponentConfigurationError, ComponentInvalidError, ConflictError, DeleteHookFailedError, HookFailedError,
  InvalidFieldsError, NotFoundError, ProjectionFailedError, RateLimitedError, TooLargeError, UpstreamError,
} from '@app/engine';
import { ApiError } from './api-error';

const STATUS_CODES: Record<number, string> = {
  400: 'invalid_request', 401: 'unauthorized', 404: 'not_found', 405: 'method_not_allowed', 409: 'conflict',
  413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited', 503: 'store_unavailable',
};

/** `{field: message}` of an engine error's field errors. */
function fieldMap(errors: { field: string; message: string }[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const e of errors) fields[e.field] = e.message;
  return fields;
}

/** The engine's refusals as API errors (status, code, details); undefined for anything else. */
export function engineApiError(err: unknown): ApiError | undefined {
  if (err instanceof NotFoundError) return new ApiError(404, 'not_found', err.message, err.field ? { fields: { [err.field]: 'not found' } } : undefined);
  if (err instanceof ConflictError) return new ApiError(409, 'conflict', err.message);
  if (err instanceof ComponentInvalidError) {
    return new ApiError(400, 'component_invalid', err.message, { fields: fieldMap(err.errors), ...(err.location ? { location: err.location } : {}) });
  }
  if (err instanceof InvalidFieldsError) return new ApiError(400, 'invalid_request', err.message, { fields: fieldMap(err.errors) });
  if (err instanceof ComponentConfigurationError) return new ApiError(400, 'configuration_error', err.message);
  if (err instanceof ComponentCallFailedError) {
    return new ApiError(400, 'component_failed', err.message, { call: err.call, error: err.error, logs: err.logs });
  }
  if (err instanceof TooLargeError) return new ApiError(413, 'payload_too_large', err.message);
  if (err instanceof RateLimitedError) return new ApiError(429, 'rate_limited', err.message);
  if (err instanceof DeleteHookFailedError) {
    return new ApiError(400, 'hook_failed', `${err.message} (pass ignore_hook_errors=true to delete anyway)`, { hook: err.hook, error: err.error, logs: err.logs });
  }
  if (err instanceof HookFailedError) return new ApiError(400, 'hook_failed', err.message, { hook: err.hook, error: err.error, logs: err.logs });
  if (err instanceof UpstreamError) return new ApiError(502, 'upstream_unavailable', err.message);
  if (err instanceof ApiKeyInUseError) return new ApiError(409, 'conflict', err.message);
  // The write may be in the log, but the read models cannot show it until the processor recovers.
  if (err instanceof ProjectionFailedError) {
    return new ApiError(503, 'read_models_unavailable', `the read models are unavailable (${err.message}); retry later`);
  }
  return undefined;
}

/** The API's error body: `{error, code, details?}`; never a stack trace. */
export function errorBody(raw: unknown): { status: number; body: { error: string; code: string; details?: Record<string, unknown> } } {
  const err = engineApiError(raw) ?? raw;
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

/** Uploads up to this size announced too large are read and dropped so the 413 reaches the client. */
const EARLY_ANSWER_DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * A body refused from its Content-Length makes Fastify answer with `connection: close`; Node then
 * closes a socket whose unread upload is still arriving, and the kernel's reset can discard the
 * 413 before the client reads it. Up to {@link EARLY_ANSWER_DRAIN_BYTES} announced, the
 * connection is kept instead: Node reads and drops the rest of the upload (bounded by its length
 * and the request timeout), and the client always gets the answer. Bigger or unannounced
 * (chunked) uploads are still cut off.
 */
export function keepAnswerReadable(status: number, headers: Record<string, string | string[] | undefined>, reply: FastifyReply): void {
  // Fastify's error, or Nest's exception wrapping it: both are answered 413.
  if (status !== 413 || reply.getHeader('connection') !== 'close') return;
  const announced = Number(headers['content-length']);
  if (Number.isSafeInteger(announced) && announced <= EARLY_ANSWER_DRAIN_BYTES) reply.removeHeader('connection');
}

/** Maps every error to the API error shape. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { status, body } = errorBody(exception);
    keepAnswerReadable(status, host.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers ?? {}, reply);
    // Every 429 is a short wait: the limits it comes from drain within seconds.
    if (status === 429) reply.header('retry-after', '1');
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
