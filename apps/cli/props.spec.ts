import { CliError } from './cli-error';
import { commandLineProps, mergeForUpdate, propValue, timerValue, unsetRequiredProps, type ConfigurableProp } from './props';

const props: ConfigurableProp[] = [
  { name: 'http', type: '$.interface.http' },
  { name: 'timer', type: '$.interface.timer' },
  { name: 'limit', type: 'integer' },
  { name: 'tags', type: 'string[]', optional: true },
  { name: 'ids', type: 'integer[]', optional: true },
  { name: 'loud', type: 'boolean', optional: true },
  { name: 'filter', type: 'object', optional: true },
  { name: 'label', type: 'string', default: 'x' },
  { name: 'token', type: 'string', secret: true },
  { name: 'acme', type: 'app' },
];

describe('pd props from the command line', () => {
  it('types each value by its prop', () => {
    expect(propValue('42', { type: 'integer' })).toBe(42);
    expect(propValue('42', { type: 'string' })).toBe('42');
    expect(propValue('yes', { type: 'boolean' })).toBe(true);
    expect(propValue('off', { type: 'boolean' })).toBe(false);
    expect(propValue('a, b', { type: 'string[]' })).toEqual(['a', ' b']);
    expect(propValue('1, 2', { type: 'integer[]' })).toEqual([1, 2]);
    expect(propValue('["1",2]', { type: 'integer[]' })).toEqual([1, 2]);
    expect(propValue('{"a":1}', { type: 'object' })).toEqual({ a: 1 });
    expect(propValue('apn_123', { type: 'app' })).toEqual({ authProvisionId: 'apn_123' });
    expect(propValue('[1,"a"]', { type: 'any' })).toEqual([1, 'a']);
    expect(propValue('plain text', undefined)).toBe('plain text');
  });

  it('reads a timer as seconds, a cron expression or the JSON object', () => {
    expect(timerValue('60')).toEqual({ intervalSeconds: 60 });
    expect(timerValue('*/5 * * * *')).toEqual({ cron: '*/5 * * * *' });
    expect(timerValue('{"cron":"0 9 * * *","timezone":"Europe/Paris"}')).toEqual({ cron: '0 9 * * *', timezone: 'Europe/Paris' });
    expect(() => timerValue('soon')).toThrow('takes a number of seconds (60) or a cron expression');
  });

  it('says which value is wrong and why', () => {
    expect(() => propValue('1.5', { type: 'integer' })).toThrow('takes an integer, got "1.5"');
    expect(() => propValue('maybe', { type: 'boolean' })).toThrow('takes true or false');
    expect(() => propValue('[1]', { type: 'object' })).toThrow('takes a JSON object');
    expect(() => propValue('[1,', { type: 'integer[]' })).toThrow('is not a valid JSON array');
  });

  it('refuses unknown and server-wired props as usage errors naming them', () => {
    const unknown = (() => {
      try {
        commandLineProps(props, ['limt=3']);
      } catch (e) {
        return e as CliError;
      }
    })();
    expect(unknown).toBeInstanceOf(CliError);
    expect(unknown!.exitCode).toBe(2);
    expect(unknown!.message).toContain('--prop limt: the component has no such prop');
    expect(() => commandLineProps(props, ['http=x'])).toThrow('--prop http: a $.interface.http prop is set up by the server');
    expect(() => commandLineProps(props, ['limit'])).toThrow('--prop takes name=value, got "limit"');
    expect(commandLineProps(props, ['limit=3', 'label=a=b'])).toEqual({ limit: 3, label: 'a=b' });
  });

  it('lists the required props still unset: no default, not optional, timers included, wired and app props left to the server', () => {
    expect(unsetRequiredProps(props, {}).map((p) => p.name)).toEqual(['timer', 'limit', 'token']);
    expect(unsetRequiredProps(props, { timer: { intervalSeconds: 1 }, limit: 1, token: 't' })).toEqual([]);
  });

  it('merges an update onto the current values, turning timers back into their input shape', () => {
    const current = { timer: { cron: null, interval_seconds: 60, timezone: null }, limit: 3, http: { endpoint_url: 'http://x/e/k' }, label: 'y' };
    expect(mergeForUpdate(props.filter((p) => p.name !== 'token'), current, { limit: 4 })).toEqual({ timer: { intervalSeconds: 60 }, limit: 4, label: 'y' });
    const cron = { timer: { cron: '0 9 * * *', interval_seconds: null, timezone: 'UTC' } };
    expect(mergeForUpdate(props.filter((p) => p.name !== 'token'), cron, {})).toEqual({ timer: { cron: '0 9 * * *', timezone: 'UTC' } });
    expect(() => mergeForUpdate(props, current, { limit: 4 })).toThrow('secret prop token must be given again with --prop');
  });
});
