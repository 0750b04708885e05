import { Matches } from 'class-validator';
import { encodeCursor } from '@app/projections';
import { ApiError } from './api-error';
import { errorBody } from './api-exception.filter';
import { BooleanField, JsonObjectField, PageLimitField, TextField } from './input-fields';
import { IsHttpUrl } from './input-formats';
import { InputValidationPipe, parseInput } from './input-validation.pipe';
import { PageQueryDto } from './page-query.dto';
import { mergeParams } from './request-params';

/** A DTO with one field of each kind, as the slices declare theirs. */
class ExampleDto {
  @IsHttpUrl()
  @TextField({ required: true })
  url!: string;

  @TextField({ required: true })
  name!: string;

  @Matches(/^\d+-\d+$/, { message: 'must look like 1-0' })
  @TextField()
  start_id?: string;

  @TextField()
  description = '';

  @BooleanField()
  active = true;

  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @PageLimitField()
  limit = 10;

  @TextField({ required: { unlessAnyOf: ['component_url'], message: 'or component_url is required' } })
  component_code?: string;

  @TextField()
  component_url?: string;
}

const valid = { url: 'https://example.com/hook', name: 'n', component_code: 'code' };

/** The API's answer to `parseInput(ExampleDto, params)` when it refuses them. */
function refusal(params: unknown) {
  try {
    parseInput(ExampleDto, params);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return errorBody(err);
  }
  throw new Error('expected the input to be refused');
}

describe('request input validation', () => {
  it('answers bad fields with the API error body: 400, invalid_request, every field named with its first problem', () => {
    expect(refusal({ url: 'ftp://example.com/x', name: 'x'.repeat(257), limit: '0', active: 'yes', component_url: 'https://example.com/c.js' })).toEqual({
      status: 400,
      body: {
        error: 'url must be an http or https URL with a host; name must be at most 256 characters (got 257); '
          + 'active must be true or false; limit must be an integer from 1 to 100',
        code: 'invalid_request',
        details: {
          fields: {
            url: 'must be an http or https URL with a host',
            name: 'must be at most 256 characters (got 257)',
            active: 'must be true or false',
            limit: 'must be an integer from 1 to 100',
          },
        },
      },
    });
  });

  it('says "is required" for a missing, empty or null required field, before any other check', () => {
    expect(refusal({ name: '', url: null, component_code: 'c' }).body.details).toEqual({ fields: { url: 'is required', name: 'is required' } });
  });

  it('checks a field\'s length before its format, and quotes a bad URL without class-validator placeholders', () => {
    expect(refusal({ ...valid, url: `http://${'x'.repeat(2100)}` }).body.details).toEqual({ fields: { url: 'must be at most 2048 characters (got 2107)' } });
    expect(refusal({ ...valid, start_id: 'x'.repeat(65) }).body.details).toEqual({ fields: { start_id: 'must be at most 64 characters (got 65)' } });
    expect(refusal({ ...valid, start_id: 'abc' }).body.details).toEqual({ fields: { start_id: 'must look like 1-0' } });
    expect(refusal({ ...valid, url: 'not a url $property $value' }).body.details).toEqual({
      fields: { url: 'must be an absolute http or https URL, got "not a url %24property %24value"' },
    });
  });

  it('requires one of a group of alternatives, naming them under the first', () => {
    expect(refusal({ url: valid.url, name: 'n' }).body.details).toEqual({ fields: { component_code: 'or component_url is required' } });
    expect(parseInput(ExampleDto, { url: valid.url, name: 'n', component_url: 'https://example.com/c.js' }).component_code).toBeUndefined();
  });

  it('converts query-string text: booleans from true/false/1/0, limit from digits, JSON numbers and booleans to text', () => {
    const cases: [unknown, boolean][] = [['true', true], ['1', true], [true, true], ['false', false], ['0', false], [false, false]];
    for (const [raw, expected] of cases) expect(parseInput(ExampleDto, { ...valid, active: raw }).active).toBe(expected);
    expect(parseInput(ExampleDto, { ...valid, limit: '25' }).limit).toBe(25);
    expect(parseInput(ExampleDto, { ...valid, limit: 25 }).limit).toBe(25);
    expect(refusal({ ...valid, limit: '2.5' }).body.details).toEqual({ fields: { limit: 'must be an integer from 1 to 100' } });
    expect(refusal({ ...valid, limit: 'ten' }).body.details).toEqual({ fields: { limit: 'must be an integer from 1 to 100' } });
    expect(parseInput(ExampleDto, { ...valid, name: 12 }).name).toBe('12');
    expect(parseInput(ExampleDto, { ...valid, name: false }).name).toBe('false');
    expect(refusal({ ...valid, name: ['a', 'b'] }).body.details).toEqual({ fields: { name: 'must be a string' } });
  });

  it('keeps defaults for absent, empty and null parameters', () => {
    const input = parseInput(ExampleDto, { ...valid, description: '', active: null, limit: '' });
    expect(input).toMatchObject({ description: '', active: true, limit: 10 });
    expect(input.configured_props).toBeUndefined();
  });

  it('takes an object parameter as a JSON object or as the JSON text of one, without prototype keys', () => {
    expect(parseInput(ExampleDto, { ...valid, configured_props: { a: 1 } }).configured_props).toEqual({ a: 1 });
    const fromText = parseInput(ExampleDto, { ...valid, configured_props: '{"a":{"b":2},"__proto__":{"polluted":1}}' }).configured_props!;
    expect(fromText).toEqual({ a: { b: 2 } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(refusal({ ...valid, configured_props: '{"a":' }).body.details).toEqual({ fields: { configured_props: 'must be a JSON object' } });
    expect(refusal({ ...valid, configured_props: '[1]' }).body.details).toEqual({ fields: { configured_props: 'must be an object' } });
    expect(refusal({ ...valid, configured_props: 'null' }).body.details).toEqual({ fields: { configured_props: 'must be an object' } });
    expect(refusal({ ...valid, configured_props: [1] }).body.details).toEqual({ fields: { configured_props: 'must be an object' } });
    expect(refusal({ ...valid, configured_props: { big: 'x'.repeat(70_000) } }).body.details).toEqual({
      fields: { configured_props: 'must be at most 65536 characters (got 70010)' },
    });
    expect(refusal({ ...valid, configured_props: 'y'.repeat(70_000) }).body.details).toEqual({
      fields: { configured_props: 'must be at most 65536 characters (got 70000)' },
    });
  });

  it('leaves code fields unbounded by length (the component saver bounds them in bytes)', () => {
    expect(parseInput(ExampleDto, { ...valid, component_code: 'x'.repeat(100_000) }).component_code).toHaveLength(100_000);
  });

  it('accepts and ignores parameters the DTO does not declare', () => {
    const input = parseInput(ExampleDto, { ...valid, workflow_id: 'p_1', extra: { deep: true } });
    expect(input).toBeInstanceOf(ExampleDto);
    expect(Object.keys(input)).not.toContain('workflow_id');
    expect(Object.keys(input)).not.toContain('extra');
  });

  it('pages: limit defaults to 10, cursors must be ones this API handed out', () => {
    expect(parseInput(PageQueryDto, {})).toMatchObject({ limit: 10, after: undefined, before: undefined });
    const cursor = encodeCursor(42);
    expect(parseInput(PageQueryDto, { limit: '3', after: cursor })).toMatchObject({ limit: 3, after: cursor });
    const message = 'is not a cursor of this list (use page_info.start_cursor or end_cursor)';
    expect(errorBody(catchError(() => parseInput(PageQueryDto, { after: 'garbage', before: Buffer.from('p:1 OR 1=1').toString('base64url') }))).body.details)
      .toEqual({ fields: { after: message, before: message } });
    expect(errorBody(catchError(() => parseInput(PageQueryDto, { before: 'x'.repeat(129) }))).body.details)
      .toEqual({ fields: { before: 'must be at most 128 characters (got 129)' } });
  });

  it('the pipe validates into the parameter\'s declared class, and refuses a parameter declared without one', () => {
    const pipe = new InputValidationPipe();
    expect(pipe.transform({ limit: '7' }, { type: 'custom', metatype: PageQueryDto })).toMatchObject({ limit: 7 });
    expect(() => pipe.transform({ limit: '7' }, { type: 'custom', metatype: Object })).toThrow(/without a DTO class/);
    expect(() => pipe.transform({ limit: '7' }, { type: 'custom' })).toThrow(/without a DTO class/);
  });

  it('merges the query string and the body (the body wins); a body that is not an object is a 400 invalid_body', () => {
    expect(mergeParams({ name: 'q', limit: '5' }, { name: 'b' })).toEqual({ name: 'b', limit: '5' });
    expect(mergeParams({ name: 'q' }, undefined)).toEqual({ name: 'q' });
    for (const body of [[1], 'text', 5]) {
      expect(errorBody(catchError(() => mergeParams({}, body)))).toEqual({
        status: 400, body: { error: 'the JSON body must be an object', code: 'invalid_body' },
      });
    }
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
