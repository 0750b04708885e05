import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { ApiError } from './api-error';

/** A request DTO class: its properties carry the decorators of `input-fields.ts`. */
export type DtoClass<T extends object> = new () => T;

function firstProblem(error: ValidationError): string {
  return Object.values(error.constraints ?? {})[0] ?? 'is invalid';
}

/**
 * Converts request parameters into `dto` and checks them: a 400 `invalid_request` whose
 * `details.fields` names every bad field with its first problem. Only the DTO's own fields are
 * read; other parameters are ignored, as the original service accepts more than this one reads.
 */
export function parseInput<T extends object>(dto: DtoClass<T>, params: unknown): T {
  const input = plainToInstance(dto, params ?? {}, {
    // Only exposed fields are copied, and an absent one leaves the DTO's default in place.
    excludeExtraneousValues: true,
    exposeUnsetFields: false,
  });
  const errors = validateSync(input, { stopAtFirstError: true, forbidUnknownValues: true });
  if (errors.length > 0) throw ApiError.fields(errors.map((e) => ({ field: e.property, message: firstProblem(e) })));
  return input;
}

/**
 * The pipe behind `@RequestInput()` and `@QueryInput()`: the parameter's declared type is the DTO.
 * A parameter declared without a class (an interface, `unknown`) fails loudly, never unchecked.
 */
@Injectable()
export class InputValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const dto = metadata.metatype;
    if (typeof dto !== 'function' || dto === Object || !dto.prototype) {
      throw new Error(`request input declared without a DTO class (${String(dto?.name ?? dto)}); declare the parameter with its DTO type`);
    }
    return parseInput(dto as DtoClass<object>, value);
  }
}
