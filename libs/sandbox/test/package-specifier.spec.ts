import { compareVersions } from '../src/package-cache';
import { classifyImport, parsePackageSpecifier } from '../src/package-specifier.parser';

describe('parsePackageSpecifier', () => {
  it('splits name, version or range, and subpath', () => {
    expect(parsePackageSpecifier('lodash')).toEqual({ name: 'lodash', range: null, subpath: '' });
    expect(parsePackageSpecifier('axios@0.19.2')).toEqual({ name: 'axios', range: '0.19.2', subpath: '' });
    expect(parsePackageSpecifier('dayjs@^1.11.0')).toEqual({ name: 'dayjs', range: '^1.11.0', subpath: '' });
    expect(parsePackageSpecifier('lodash@~4.17.0/get')).toEqual({ name: 'lodash', range: '~4.17.0', subpath: '/get' });
    expect(parsePackageSpecifier('lodash/fp/get')).toEqual({ name: 'lodash', range: null, subpath: '/fp/get' });
    expect(parsePackageSpecifier('@scope/pkg@1.2.3/sub')).toEqual({ name: '@scope/pkg', range: '1.2.3', subpath: '/sub' });
    expect(parsePackageSpecifier('@pipedream/platform')).toEqual({ name: '@pipedream/platform', range: null, subpath: '' });
    expect(parsePackageSpecifier('pkg@>=1.0.0 <2')).toEqual({ name: 'pkg', range: '>=1.0.0 <2', subpath: '' });
    expect(parsePackageSpecifier('pkg@next')).toEqual({ name: 'pkg', range: 'next', subpath: '' });
  });

  it('refuses what is not an npm name, a range or a path inside the package', () => {
    for (const bad of ['Lodash', '_private', '.hidden', '@scope', '@scope/', 'pkg@', 'pkg@1.0.0;rm -rf', 'pkg/../../etc', 'pkg/./x', 'pkg/', 'pkg//x',
      'pkg\\x', 'a b', 'pkg@$(id)', 'sluice-node:buffer', `${'a'.repeat(215)}`]) {
      expect([bad, parsePackageSpecifier(bad)]).toEqual([bad, null]);
    }
  });
});

describe('classifyImport', () => {
  it('tells relative, URL, built-in and package imports apart', () => {
    expect(classifyImport('./common.mjs').kind).toBe('relative');
    expect(classifyImport('/abs').kind).toBe('relative');
    expect(classifyImport('https://esm.sh/lodash').kind).toBe('url');
    expect(classifyImport('fs')).toEqual({ kind: 'builtin', module: 'fs' });
    expect(classifyImport('node:crypto')).toEqual({ kind: 'builtin', module: 'crypto' });
    expect(classifyImport('fs/promises')).toEqual({ kind: 'builtin', module: 'fs/promises' });
    // A version makes it the npm package of that name.
    expect(classifyImport('events@3.3.0')).toEqual({ kind: 'package', specifier: { name: 'events', range: '3.3.0', subpath: '' } });
    expect(classifyImport('NotAName').kind).toBe('invalid');
  });
});

describe('compareVersions', () => {
  it('orders by semver precedence', () => {
    const sorted = ['1.11.10', '1.2.0', '1.11.2', '1.0.0-beta.2', '1.0.0', '1.0.0-alpha', '1.0.0-beta.11', '1.0.0-alpha.1', '0.9.9', '10.0.0'].sort(compareVersions);
    expect(sorted).toEqual(['0.9.9', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0', '1.2.0', '1.11.2', '1.11.10', '10.0.0']);
    expect(compareVersions('1.0.0+build', '1.0.0')).toBe(0);
  });
});
