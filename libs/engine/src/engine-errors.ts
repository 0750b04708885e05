import { HookFailedError } from './source-actor';

/** A field of a request and what is wrong with it. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * The engine's refusals. They carry what was refused and why, never an HTTP status: the HTTP
 * layer (src/http/api-exception.filter.ts) maps each class to its status and code.
 */
export abstract class EngineError extends Error {}

/** What was asked for does not exist or belongs to another account (never told apart). */
export class NotFoundError extends EngineError {
  /** `field`: the input that named the missing thing, when it came from one. */
  constructor(readonly what: string, readonly field?: string) {
    super(`${what} not found`);
    this.name = 'NotFoundError';
  }
}

/** The resource is not in a state that allows the change (e.g. a source still deploying). */
export class ConflictError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ConflictError';
  }
}

/** Input that breaks a domain rule, with one message per field at fault. */
export class InvalidFieldsError extends EngineError {
  constructor(readonly errors: FieldError[], message = errors.map((e) => `${e.field} ${e.message}`).join('; ')) {
    super(message);
    this.name = 'InvalidFieldsError';
  }
}

/** Component code that cannot be bundled, loaded or described; `location` points into the code when known. */
export class ComponentInvalidError extends InvalidFieldsError {
  constructor(errors: FieldError[], message?: string, readonly location?: unknown) {
    super(errors, message);
    this.name = 'ComponentInvalidError';
  }
}

/** Too much is waiting already (a workflow's lane is full): the caller should retry shortly. */
export class RateLimitedError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'RateLimitedError';
  }
}

/** Input larger than the engine accepts (component code). */
export class TooLargeError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'TooLargeError';
  }
}

/** The `deactivate` hook failed while deleting a source; the caller may delete anyway, ignoring hook errors. */
export class DeleteHookFailedError extends HookFailedError {
  constructor(failure: HookFailedError) {
    super(failure.hook, failure.error, failure.logs);
    this.name = 'DeleteHookFailedError';
  }
}

/** `accounts.create` with a key that is already issued: keys are unique, never moved to another account. */
export class ApiKeyInUseError extends EngineError {
  constructor() {
    super('this API key is already issued to an account; keys are unique: give another key, or none to get a new one');
    this.name = 'ApiKeyInUseError';
  }
}

/**
 * Component code refused its configuration: it threw an error named `ConfigurationError`
 * (whichever package or class it comes from). The message is for whoever configures the
 * component; no stack is kept.
 */
export class ComponentConfigurationError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ComponentConfigurationError';
  }
}

/**
 * Component code failed while configuring props (a prop's `options` or `additionalProps`): it
 * threw (anything but a `ConfigurationError`), broke a limit of the sandbox, or returned what is
 * not options or props. `call` names what ran; `error` and `logs` are what it left.
 */
export class ComponentCallFailedError extends EngineError {
  constructor(
    readonly call: string,
    readonly error: { name: string; message: string },
    readonly logs: { level: string; message: string; ts: number }[],
  ) {
    super(`${call} failed: ${error.name}: ${error.message}`);
    this.name = 'ComponentCallFailedError';
  }
}

/** A third party the server itself had to reach (an OAuth provider's token endpoint) failed or could not be reached; trying again later may succeed. */
export class UpstreamError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamError';
  }
}
