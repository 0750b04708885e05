import { Expose, Transform } from 'class-transformer';
import { IsBoolean, IsDefined, IsInt, IsOptional, IsString, Max, MaxLength, Min, ValidateBy, ValidateIf } from 'class-validator';
import { maxLengthOf, MAX_OBJECT_PARAM_JSON } from './field-limits';
import { safeJsonParse } from './request-params';

/*
 * Property decorators for request DTOs. Each one exposes the field to class-transformer, converts
 * the raw value the way query strings and JSON bodies send it, and registers its checks in the
 * order they must run: the pipe stops at a field's first failing check, so a missing field says
 * "is required" and an over-long one names its limit before any format check looks at it.
 * Conversions read the raw value (`obj[field]`), not class-transformer's copy of it, so an object
 * parameter arrives as sent.
 *
 * A format check written above one of these (`@IsHttpUrl() @TextField() url`) runs after it:
 * decorators apply bottom-up.
 */

function applyAll(target: object, key: string | symbol, decorators: PropertyDecorator[]): void {
  for (const decorate of decorators) decorate(target, key);
}

/** The message of a text over its limit, as the API has always worded it. */
function tooLongMessage(max: number, length: number): string {
  return `must be at most ${max} characters (got ${length})`;
}

/** An empty or null parameter is an absent one: query strings send `name=` for "not given". */
function isAbsent(raw: unknown): boolean {
  return raw === undefined || raw === null || raw === '';
}

/** JSON numbers and booleans are accepted as their text (`{"emitter_id": 12}`). */
function toText(raw: unknown): unknown {
  if (isAbsent(raw)) return undefined;
  return typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : raw;
}

/** JSON booleans, and `true`/`false`/`1`/`0` from the query string; anything else is left for the check to refuse. */
function toBoolean(raw: unknown): unknown {
  if (isAbsent(raw)) return undefined;
  if (raw === true || raw === 'true' || raw === '1') return true;
  if (raw === false || raw === 'false' || raw === '0') return false;
  return raw;
}

/** Options of `TextField`. */
export interface TextFieldOptions {
  /**
   * `true`: missing or empty is a 400 "is required". `{ unlessAnyOf, message }`: required only
   * when none of those fields is given either; `message` names the alternatives.
   */
  required?: true | { unlessAnyOf: string[]; message: string };
}

function presenceChecks(field: string, required: TextFieldOptions['required']): PropertyDecorator[] {
  if (required === undefined) return [IsOptional()];
  if (required === true) return [IsDefined({ message: 'is required' })];
  const { unlessAnyOf, message } = required;
  return [
    ValidateIf((dto: Record<string, unknown>) => dto[field] !== undefined || unlessAnyOf.every((other) => dto[other] === undefined)),
    IsDefined({ message }),
  ];
}

/**
 * A text parameter, at most `maxLengthOf(<property name>)` characters (`field-limits.ts`): the
 * limit comes from the name, so a new field is bounded without anyone thinking of it.
 */
export function TextField(options: TextFieldOptions = {}): PropertyDecorator {
  return (target, key) => {
    const field = String(key);
    const max = maxLengthOf(field);
    applyAll(target, key, [
      Expose(),
      Transform(({ obj }) => toText((obj as Record<string, unknown>)[field])),
      ...presenceChecks(field, options.required),
      IsString({ message: 'must be a string' }),
      ...(Number.isFinite(max) ? [MaxLength(max, { message: (a) => tooLongMessage(max, String(a.value).length) })] : []),
    ]);
  };
}

/** A boolean parameter: JSON `true`/`false`, or `"true"`, `"false"`, `"1"`, `"0"` from the query string. */
export function BooleanField(): PropertyDecorator {
  return (target, key) => {
    const field = String(key);
    applyAll(target, key, [
      Expose(),
      Transform(({ obj }) => toBoolean((obj as Record<string, unknown>)[field])),
      IsOptional(),
      IsBoolean({ message: 'must be true or false' }),
    ]);
  };
}

const PAGE_LIMIT_MESSAGE = 'must be an integer from 1 to 100';

/** `limit`: an integer from 1 to 100 (a number or its text); absent keeps the DTO's default. */
export function PageLimitField(): PropertyDecorator {
  return (target, key) => {
    const field = String(key);
    applyAll(target, key, [
      Expose(),
      Transform(({ obj }) => {
        const raw = (obj as Record<string, unknown>)[field];
        return raw === undefined || raw === '' ? undefined : Number(raw);
      }),
      IsInt({ message: PAGE_LIMIT_MESSAGE }),
      Min(1, { message: PAGE_LIMIT_MESSAGE }),
      Max(100, { message: PAGE_LIMIT_MESSAGE }),
    ]);
  };
}

const NON_NEGATIVE_INTEGER_MESSAGE = 'must be an integer of 0 or more';

/** A non-negative integer (a number or its text, e.g. `page`); absent stays undefined. */
export function NonNegativeIntegerField(): PropertyDecorator {
  return (target, key) => {
    const field = String(key);
    applyAll(target, key, [
      Expose(),
      Transform(({ obj }) => {
        const raw = (obj as Record<string, unknown>)[field];
        if (isAbsent(raw)) return undefined;
        return typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
      }),
      IsOptional(),
      IsInt({ message: NON_NEGATIVE_INTEGER_MESSAGE }),
      Min(0, { message: NON_NEGATIVE_INTEGER_MESSAGE }),
      Max(Number.MAX_SAFE_INTEGER, { message: NON_NEGATIVE_INTEGER_MESSAGE }),
    ]);
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What is wrong with an object parameter, if anything: over `MAX_OBJECT_PARAM_JSON` as JSON
 * text, text that is not JSON, or JSON that is not an object.
 */
function objectParamProblem(value: unknown): string | undefined {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text.length > MAX_OBJECT_PARAM_JSON) return tooLongMessage(MAX_OBJECT_PARAM_JSON, text.length);
  let parsed = value;
  if (typeof value === 'string') {
    try {
      parsed = safeJsonParse(value);
    } catch {
      return 'must be a JSON object';
    }
  }
  return isPlainObject(parsed) ? undefined : 'must be an object';
}

/**
 * An object parameter (`configured_props`): a JSON object in a body, or the JSON text of one in a
 * query string; at most `MAX_OBJECT_PARAM_JSON` characters as JSON. Text is parsed without
 * prototype keys; text that is not an object's JSON stays text for the check to refuse.
 */
export function JsonObjectField(): PropertyDecorator {
  return (target, key) => {
    const field = String(key);
    applyAll(target, key, [
      Expose(),
      Transform(({ obj }) => {
        const raw = (obj as Record<string, unknown>)[field];
        if (isAbsent(raw)) return undefined;
        if (typeof raw !== 'string' || raw.length > MAX_OBJECT_PARAM_JSON) return raw;
        try {
          const parsed = safeJsonParse(raw);
          return isPlainObject(parsed) ? parsed : raw;
        } catch {
          return raw;
        }
      }),
      IsOptional(),
      ValidateBy({
        name: 'isJsonObject',
        validator: {
          validate: (value) => objectParamProblem(value) === undefined,
          defaultMessage: (args) => objectParamProblem(args?.value) ?? 'must be an object',
        },
      }),
    ]);
  };
}
