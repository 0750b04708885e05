import { details, table, time } from './output';

describe('pd output for people', () => {
  it('aligns table columns under upper-case headings, without trailing spaces', () => {
    const rows = [{ id: 'dc_1', name: 'A long name', on: true }, { id: 'dc_22', name: 'B', on: false }];
    expect(table(rows, [{ header: 'id', value: (r) => r.id }, { header: 'name', value: (r) => r.name }, { header: 'on', value: (r) => r.on }])).toBe(
      'ID     NAME         ON\n'
      + 'dc_1   A long name  true\n'
      + 'dc_22  B            false',
    );
  });

  it('shows objects as one line of JSON and an empty list as its own line', () => {
    expect(table([{ p: { a: 1 } }], [{ header: 'p', value: (r) => r.p }])).toBe('P\n{"a":1}');
    expect(table([], [{ header: 'x', value: () => 1 }], 'no sources')).toBe('no sources');
    expect(details([['id', 'dc_1'], ['endpoint', undefined], ['props', { a: 1 }]])).toBe('id:       dc_1\nprops:    {"a":1}');
  });

  it('prints epoch seconds and milliseconds as the same UTC time', () => {
    expect(time(1700000000)).toBe('2023-11-14T22:13:20Z');
    expect(time(1700000000123)).toBe('2023-11-14T22:13:20Z');
  });
});
