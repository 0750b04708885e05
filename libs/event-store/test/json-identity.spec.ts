import { readsAsItsJson } from '../src/json-identity';

/** What the log gives back for `value`. */
const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

class Point {
  constructor(readonly x: number) {}
}

describe('readsAsItsJson', () => {
  const clean: [string, unknown][] = [
    ['null', null],
    ['a string with quotes, a lone surrogate and a line break', 'a"b\ud800\n'],
    ['booleans and numbers', [true, false, 0, 1.5, -3, 1e21, Number.MAX_SAFE_INTEGER]],
    ['an empty object and an empty array', { o: {}, a: [] }],
    ['nested objects, arrays and nulls', { sourceId: 'dc_1', meta: { id: 7, name: '', ts: 1 }, event: { list: [1, 'two', null, { deep: [[]] }] } }],
    ['integer-like keys, whose order both put first', { b: 1, 2: 'two', a: 3, 1: 'one' }],
  ];
  it.each(clean)('is true for %s, and the value is what its JSON gives back', (_label, value) => {
    expect(readsAsItsJson(value)).toBe(true);
    expect(value).toStrictEqual(roundTrip(value));
  });

  const awkward: [string, unknown][] = [
    ['an undefined field', { a: 1, b: undefined }],
    ['an undefined field deep down', { a: { b: [{ c: undefined }] } }],
    ['undefined in an array', [1, undefined, 3]],
    // eslint-disable-next-line no-sparse-arrays
    ['a hole in an array', [1, , 3]],
    ['-0', { n: -0 }],
    ['NaN', [Number.NaN]],
    ['Infinity', { n: Number.POSITIVE_INFINITY }],
    ['a Date', { at: new Date(0) }],
    ['a Map', { m: new Map([[1, 2]]) }],
    ['a class instance', { p: new Point(1) }],
    ['an object without a prototype', { o: Object.assign(Object.create(null), { a: 1 }) }],
    ['a function', { f: () => 1 }],
    ['an object with toJSON', { d: { toJSON: () => 'x' } }],
  ];
  it.each(awkward)('is false for %s, which its JSON does not give back', (_label, value) => {
    expect(readsAsItsJson(value)).toBe(false);
    expect(value).not.toStrictEqual(roundTrip(value));
  });

  it('is false past its depth, where the text is parsed instead', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(readsAsItsJson(deep)).toBe(false);
    let shallow: unknown = 1;
    for (let i = 0; i < 20; i++) shallow = [shallow];
    expect(readsAsItsJson(shallow)).toBe(true);
  });
});
