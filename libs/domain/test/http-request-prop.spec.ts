import { randomBytes } from 'node:crypto';
import { validateDefinition } from '../src/component-definition';
import { publicProps, runtimeProps, validateConfiguredProps } from '../src/configured-props';
import type { PropDefinition } from '../src/events';
import { SecretBox } from '../src/secret-box';

const box = new SecretBox(randomBytes(32));
const props: PropDefinition[] = [{ name: 'request', type: 'http_request' }];

function problem(value: unknown): string | undefined {
  const { errors } = validateConfiguredProps(props, { request: value }, box);
  expect(errors.every((e) => e.field === 'configured_props.request')).toBe(true);
  return errors[0]?.message;
}

describe('the http_request prop type', () => {
  it('is a prop type of sources and actions', () => {
    for (const type of ['source', 'action']) {
      const checked = validateDefinition({ name: 'r', version: '1.0.0', type, props: [{ name: 'request', type: 'http_request' }], hooks: [], methods: [], hasRun: true });
      expect(checked.errors).toEqual([]);
    }
  });

  it('stores a complete request as configured', () => {
    const value = {
      url: 'https://api.example.com/items',
      method: 'post',
      headers: [{ name: 'X-Trace', value: 'abc' }],
      params: { page: 2, all: true },
      body: { name: 'thing' },
      auth: { type: 'bearer', token: 't0k' },
    };
    const { values, errors } = validateConfiguredProps(props, { request: value }, box);
    expect(errors).toEqual([]);
    // The credential is stored sealed, never shown by the API, and opened for the run only.
    expect(JSON.stringify(values)).not.toContain('t0k');
    expect(publicProps(values)).toEqual({ request: { ...value, auth: { type: 'bearer' } } });
    expect(runtimeProps(values, box)).toEqual({ request: value });
    expect(problem({ url: 'http://127.0.0.1:8080/x' })).toBeUndefined();
    expect(problem({ url: 'https://example.com', auth: { type: 'basic', username: 'u', password: 'p' } })).toBeUndefined();
    const basic = validateConfiguredProps(props, { request: { url: 'https://example.com', auth: { type: 'basic', username: 'u', password: 'hunter2' } } }, box).values;
    expect(JSON.stringify(basic)).not.toContain('hunter2');
    expect(runtimeProps(basic, box)).toEqual({ request: { url: 'https://example.com', auth: { type: 'basic', username: 'u', password: 'hunter2' } } });
  });

  it('refuses what cannot be a request, naming the prop', () => {
    expect(problem('https://example.com')).toMatch(/must be an object/);
    expect(problem({ method: 'GET' })).toBe('needs a url');
    expect(problem({ url: '/relative' })).toBe('url must be an absolute URL');
    expect(problem({ url: 'file:///etc/passwd' })).toBe('url must be an http or https URL');
    expect(problem({ url: 'https://example.com', method: 'TRACE' })).toMatch(/method must be one of GET, POST/);
    expect(problem({ url: 'https://example.com', method: 'GET', body: 'x' })).toBe('a GET request cannot have a body');
    expect(problem({ url: 'https://example.com', headers: { 'bad name': 'x' } })).toMatch(/not a valid header name/);
    expect(problem({ url: 'https://example.com', headers: { 'x-a': 'one\r\nx-b: two' } })).toMatch(/line breaks/);
    expect(problem({ url: 'https://example.com', params: 'a=1' })).toMatch(/params must be an object/);
    expect(problem({ url: 'https://example.com', auth: { type: 'digest' } })).toMatch(/auth.type must be one of none, basic, bearer/);
    expect(problem({ url: 'https://example.com', auth: { type: 'bearer' } })).toMatch(/needs a token/);
    expect(problem({ url: 'https://example.com', timeout: 5 })).toMatch(/unknown field "timeout"/);
  });

  it('is required unless optional', () => {
    expect(validateConfiguredProps(props, {}, box).errors).toEqual([{ field: 'configured_props.request', message: 'is required' }]);
    expect(validateConfiguredProps([{ ...props[0], optional: true }], {}, box).errors).toEqual([]);
  });
});
