import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCallgrind } from './callgrind-file';

describe('parseCallgrind', () => {
  it('sums own costs by object, following name compression and leaving out the inclusive cost of calls', () => {
    const text = [
      'version: 1',
      'positions: line',
      'events: Ir',
      'summary: 1060',
      'ob=(1) /usr/bin/node',
      'fl=(1) ???',
      'fn=(1) main',
      '10 100',
      '+2 50',
      'cob=(2) /lib/libsqlite.so',
      'cfn=(2) step',
      'calls=3 0',
      '12 900', // inclusive cost of the three calls: counted in `step` below, not here
      'ob=(2)',
      'fn=(2)',
      '0 900',
      'ob=(1)',
      'fn=(1)',
      '* 10',
      '',
    ].join('\n');
    const counts = parseCallgrind(text);
    expect(counts.total).toBe(1060);
    expect(Object.fromEntries(counts.byObject)).toEqual({ '/usr/bin/node': 160, '/lib/libsqlite.so': 900 });
  });

  it("adds up to the summary of a real callgrind file", () => {
    try {
      execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    } catch {
      console.log('skipped: valgrind is not installed, so no real callgrind file can be made');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-test-'));
    try {
      const file = join(dir, 'out');
      execFileSync('valgrind', ['-q', '--tool=callgrind', `--callgrind-out-file=${file}`, process.execPath, '-e', 'JSON.stringify({ a: [1, 2, 3] })'], { stdio: 'ignore', timeout: 120_000 });
      const text = readFileSync(file, 'utf8');
      const summary = Number(/^summary: (\d+)/m.exec(text)![1]);
      const counts = parseCallgrind(text);
      const sum = [...counts.byObject.values()].reduce((a, b) => a + b, 0);
      expect(summary).toBeGreaterThan(1_000_000);
      expect(counts.total).toBe(summary);
      expect(sum).toBe(summary);
      expect([...counts.byObject.keys()].some((o) => o.endsWith('/node'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
