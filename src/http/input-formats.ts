import { ValidateBy } from 'class-validator';
import { decodeCursor } from '@app/projections';
import { httpUrlProblem } from './request-params';

/*
 * Format checks for text fields of request DTOs; write them above `@TextField()`, which must run
 * first (see input-fields.ts).
 */

/** An absolute http or https URL with a host. */
export function IsHttpUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'isHttpUrl',
    validator: {
      validate: (value) => typeof value === 'string' && httpUrlProblem(value) === undefined,
      defaultMessage: (args) => httpUrlProblem(String(args?.value)) ?? 'must be an http or https URL',
    },
  });
}

/**
 * A cursor this API handed out (`page_info.start_cursor` / `end_cursor`): anything else is a 400
 * naming the field, never a silent first page.
 */
export function IsPageCursor(): PropertyDecorator {
  return ValidateBy({
    name: 'isPageCursor',
    validator: {
      validate: (value) => typeof value === 'string' && decodeCursor(value) !== undefined,
      defaultMessage: () => 'is not a cursor of this list (use page_info.start_cursor or end_cursor)',
    },
  });
}
