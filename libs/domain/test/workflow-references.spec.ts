import { checkStepReferences, resolveReferences } from '@app/domain';

describe('step references', () => {
  const steps = {
    trigger: { event: { body: { n: 3, tags: ['a', 'b'] } } },
    one: { $return_value: { total: 7 }, greeting: 'hi' },
  };

  it('an exact reference takes the value with its type; one inside a longer string is interpolated as text', () => {
    expect(resolveReferences({
      n: '{{steps.trigger.event.body.n}}', obj: '{{ steps.one.$return_value }}', tag: '{{steps.trigger.event.body.tags[1]}}',
      text: 'n={{steps.trigger.event.body.n}} r={{steps.one.$return_value}} g={{steps.one.greeting}} none={{steps.one.nope}}',
      nested: { list: ['{{steps.one.greeting}}', 2] }, plain: 5,
    }, steps)).toEqual({
      n: 3, obj: { total: 7 }, tag: 'b', text: 'n=3 r={"total":7} g=hi none=', nested: { list: ['hi', 2] }, plain: 5,
    });
  });

  it('references are data paths, never evaluated: no prototype, no code', () => {
    expect(resolveReferences({ a: '{{steps.one.constructor}}', b: '{{steps.one.greeting.length}}', c: '{{ process.exit() }}' }, steps))
      .toEqual({ a: undefined, b: undefined, c: '{{ process.exit() }}' });
  });

  it('a reference to an unknown or later step is an error naming the field', () => {
    expect(checkStepReferences({ a: '{{steps.trigger.event}}', b: 'x {{steps.one.y}}' }, ['one'], 'steps[1].configured_props')).toEqual([]);
    expect(checkStepReferences({ a: { deep: '{{steps.three.$return_value}}' } }, ['one'], 'steps[1].configured_props')).toEqual([{
      field: 'steps[1].configured_props.a.deep',
      message: 'refers to step "three", which is not an earlier step of this workflow (steps.three.$return_value)',
    }]);
  });
});
