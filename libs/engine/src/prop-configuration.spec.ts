import { mergeProps } from './prop-configuration';

describe('mergeProps (static props with what additionalProps() adds)', () => {
  it('keeps the static order, replaces a static prop of the same name in place and appends new ones', () => {
    const merged = mergeProps(
      [{ name: 'a', type: 'string' }, { name: 'b', type: 'string', reloadProps: true }],
      [{ name: 'c', type: 'integer' }, { name: 'a', type: 'string', optional: true }],
    );
    expect(merged).toEqual([
      { name: 'a', type: 'string', optional: true },
      { name: 'b', type: 'string', reloadProps: true },
      { name: 'c', type: 'integer' },
    ]);
  });
  it('is the static set when nothing is added', () => {
    const statics = [{ name: 'a', type: 'string' }];
    expect(mergeProps(statics, [])).toEqual(statics);
  });
});
