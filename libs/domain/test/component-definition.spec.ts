import { RawDescription, validateDefinition, validateProps } from '../src/component-definition';

const base = (over: Partial<RawDescription> = {}): RawDescription => ({
  name: 'Src', version: '0.0.1', props: [], hooks: [], methods: [], hasRun: true, ...over,
});
const fields = (raw: RawDescription, publish = false) => {
  const r = validateDefinition(raw, { publish });
  return r.errors.map((x) => x.field);
};

describe('validateDefinition (spec 2.4 / 2.5)', () => {
  it('accepts a minimal source and defaults type to source', () => {
    const r = validateDefinition(base());
    expect(r.definition?.type).toBe('source');
  });
  it('requires name, version and run', () => {
    expect(fields(base({ name: undefined, version: '', hasRun: false }))).toEqual(['name', 'version', 'run']);
  });
  it('a timer source without run is valid', () => {
    expect(fields(base({ hasRun: false, props: [{ name: 't', type: '$.interface.timer' }] }))).toEqual([]);
  });
  it('semver only when publishing', () => {
    expect(fields(base({ version: 'v1' }))).toEqual([]);
    expect(fields(base({ version: 'v1' }), true)).toEqual(['version']);
  });
  it('hooks and dedupe only in sources; dedupe one of three', () => {
    expect(fields(base({ type: 'action', hooks: ['deploy'], dedupe: 'unique' }))).toEqual(['dedupe', 'hooks']);
    expect(fields(base({ dedupe: 'newest' }))).toEqual(['dedupe']);
  });
  it('prop rules: secret on strings, min/max on integers, arrays where supported', () => {
    const props = [
      { name: 'a', type: 'integer', secret: true },
      { name: 'b', type: 'string', min: 1 },
      { name: 'c', type: 'string', default: 'x' },
      { name: 'd', type: 'object[]' },
      { name: 'e', type: 'any' },
      { name: 'f', type: 'nope' },
      { name: 'g', type: 'string[]', optional: true, default: ['x'] },
      { name: 'h', type: 'integer', min: 0, max: 5 },
    ];
    expect(fields(base({ props }))).toEqual(['props.a.secret', 'props.b.min', 'props.d.type', 'props.e.type', 'props.f.type']);
  });
  it('accepts a default on a prop that is not optional, with a warning (registry components rely on it)', () => {
    const r = validateDefinition(base({ props: [{ name: 'c', type: 'string', default: 'x' }, { name: 'g', type: 'string', optional: true, default: 'y' }] }));
    expect(r.errors).toEqual([]);
    expect(r.definition!.props[0]).toMatchObject({ name: 'c', default: 'x' });
    expect(r.warnings!.map((w: { field: string }) => w.field)).toEqual(['props.c.default']);
  });
  it('interfaces only in sources; db in an action is accepted with a warning', () => {
    expect(fields(base({ type: 'action', props: [{ name: 'h', type: '$.interface.http' }, { name: 't', type: '$.interface.timer' }] })))
      .toEqual(['props.h.type', 'props.t.type']);
    const r = validateDefinition(base({ type: 'action', props: [{ name: 'db', type: '$.service.db' }] }));
    expect(r.errors).toEqual([]);
    expect(r.warnings!.map((w: { field: string }) => w.field)).toEqual(['props.db.type']);
    expect(validateDefinition(base({ props: [{ name: 'db', type: '$.service.db' }] })).warnings).toEqual([]);
  });
  it('resolves propDefinition from the app, the prop overriding it', () => {
    const app = { type: 'app', app: 'demo', propDefinitions: { who: { type: 'string', label: 'Who', description: 'from app' } } };
    const r = validateDefinition(base({ props: [
      { name: 'demo', ...app },
      { name: 'who', propDefinition: [app, 'who'], label: 'Whom', optional: true },
    ] }));
    expect(r.errors).toEqual([]);
    expect(r.definition!.props[1]).toEqual({ name: 'who', type: 'string', label: 'Whom', description: 'from app', optional: true, propDefinition: ['demo', 'who'] });
    expect(fields(base({ props: [{ name: 'who', propDefinition: [app, 'nope'] }] }))).toEqual(['props.who.propDefinition']);
    expect(fields(base({ props: [{ name: 'who', propDefinition: ['demo', 'who'] }] }))).toEqual(['props.who.propDefinition']);
  });
});

describe('dynamic props (spec 2.5 "Dynamic props")', () => {
  it('records hasAdditionalProps only when the definition has the method', () => {
    expect(validateDefinition(base({ hasAdditionalProps: true })).definition).toMatchObject({ hasAdditionalProps: true });
    expect(validateDefinition(base()).definition).not.toHaveProperty('hasAdditionalProps');
  });
  it('validateProps checks added props with the static rules and resolves their propDefinition', () => {
    const app = { type: 'app', app: 'forum', propDefinitions: { tag: { type: 'string', label: 'Tag' } } };
    const r = validateProps([
      { name: 'ok', type: 'string', secret: true },
      { name: 'tag', propDefinition: [app, 'tag'], optional: true },
      { name: 'bad', type: 'integer', secret: true },
      { name: 'ghost', propDefinition: [app, 'nope'] },
    ], true);
    // A prop breaking a rule is still listed (resolved); the errors are what callers refuse on.
    expect(r.props.map((p) => p.name)).toEqual(['ok', 'tag', 'bad']);
    expect(r.props[1]).toEqual({ name: 'tag', type: 'string', label: 'Tag', optional: true, propDefinition: ['forum', 'tag'] });
    expect(r.errors.map((e) => e.field)).toEqual(['props.bad.secret', 'props.ghost.propDefinition']);
  });
});
