import { randomBytes } from 'node:crypto';
import { publicProps, runtimeProps, validateConfiguredProps } from '../src/configured-props';
import { SecretBox } from '../src/secret-box';
import type { PropDefinition } from '../src/events';

const box = new SecretBox(randomBytes(32));
const props: PropDefinition[] = [
  { name: 'token', type: 'string', secret: true },
  { name: 'count', type: 'integer', min: 1, max: 10, optional: true, default: 3 },
  { name: 'mode', type: 'string', options: [{ label: 'Fast', value: 'fast' }, 'slow'], optional: true },
  { name: 'tags', type: 'string[]', optional: true },
  { name: 'http', type: '$.interface.http' },
];

describe('validateConfiguredProps', () => {
  it('applies defaults, seals secrets, skips interfaces', () => {
    const { values, errors } = validateConfiguredProps(props, { token: 's3cret' }, box);
    expect(errors).toEqual([]);
    expect(values.count).toBe(3);
    expect(JSON.stringify(values)).not.toContain('s3cret');
    expect(runtimeProps(values, box).token).toBe('s3cret');
    expect(publicProps(values)).toEqual({ count: 3 });
    expect(values).not.toHaveProperty('http');
  });
  it('names each bad field', () => {
    const { errors } = validateConfiguredProps(props, { count: 11, mode: 'medium', tags: 'x', extra: 1 }, box);
    expect(Object.fromEntries(errors.map((e) => [e.field, e.message]))).toEqual({
      'configured_props.extra': 'is not a prop of this component',
      'configured_props.token': 'is required',
      'configured_props.count': 'must be at most 10',
      'configured_props.mode': 'must be one of the prop\'s options ("fast", "slow")',
      'configured_props.tags': 'must be an array of string',
    });
  });
  it('refuses values over 64 KB', () => {
    const { errors } = validateConfiguredProps(props, { token: 'x'.repeat(65 * 1024) }, box);
    expect(errors[0].message).toMatch(/64 KB/);
  });
  it('keeps previous values on update when none are given', () => {
    const first = validateConfiguredProps(props, { token: 'a', count: 5 }, box).values;
    const { values } = validateConfiguredProps(props, undefined, box, first);
    expect(values.count).toBe(5);
    expect(runtimeProps(values, box).token).toBe('a');
  });
});

describe('SecretBox', () => {
  it('round-trips and detects tampering', () => {
    const sealed = box.seal('hello');
    expect(box.open(sealed)).toBe('hello');
    const raw = Buffer.from(sealed.$sealed, 'base64');
    raw[raw.length - 1] ^= 1;
    expect(() => box.open({ $sealed: raw.toString('base64') })).toThrow();
  });
});
