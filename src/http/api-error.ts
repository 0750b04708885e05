/** An error the REST API answers with its status, machine code and the fields at fault. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  static badRequest(message: string, details?: Record<string, unknown>, code = 'invalid_request'): ApiError {
    return new ApiError(400, code, message, details);
  }

  /** A 400 naming each bad field: `details.fields = {field: message}`. */
  static fields(errors: { field: string; message: string }[], code = 'invalid_request'): ApiError {
    const fields: Record<string, string> = {};
    for (const e of errors) fields[e.field] = e.message;
    return new ApiError(400, code, errors.map((e) => `${e.field} ${e.message}`).join('; '), { fields });
  }

  static notFound(what: string): ApiError {
    return new ApiError(404, 'not_found', `${what} not found`);
  }
}
