import { kindOfId, matchName } from './names';

const items = [
  { id: 'dc_aaaaaaaa', name: 'Front Door', name_slug: 'front-door' },
  { id: 'dc_bbbbbbbb', name: 'Twin', name_slug: 'twin' },
  { id: 'dc_cccccccc', name: 'Twin', name_slug: 'twin-2' },
  { id: 'dc_dddddddd', name: 'twin-2', name_slug: 'other' },
];

describe('naming a resource by id, name slug or display name', () => {
  it('tries the id, then the slug, then the display name (exact, then any case)', () => {
    expect(matchName(items, 'dc_aaaaaaaa')).toEqual([items[0]]);
    expect(matchName(items, 'front-door')).toEqual([items[0]]);
    expect(matchName(items, 'Front Door')).toEqual([items[0]]);
    expect(matchName(items, 'FRONT DOOR')).toEqual([items[0]]);
    // A slug wins over another item's display name.
    expect(matchName(items, 'twin-2')).toEqual([items[2]]);
  });

  it('returns every item with an ambiguous display name, and none for an unknown one', () => {
    expect(matchName(items, 'Twin').map((i) => i.id)).toEqual(['dc_bbbbbbbb', 'dc_cccccccc']);
    expect(matchName(items, 'nobody')).toEqual([]);
  });

  it('tells the kind of an id by its prefix', () => {
    expect(kindOfId('dc_aaaaaaaa')).toBe('source');
    expect(kindOfId('p_aaaaaaaa')).toBe('workflow');
    expect(kindOfId('wh_aaaaaaaa')).toBe('webhook');
    expect(kindOfId('dc_')).toBeUndefined();
    expect(kindOfId('front-door')).toBeUndefined();
  });
});
