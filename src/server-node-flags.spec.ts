import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from './server-node-flags';

describe('SERVER_NODE_FLAGS', () => {
  it('are what `npm start` passes to node, before the server script', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const words = pkg.scripts.start.split(/\s+/);
    const script = words.indexOf('dist/src/main.js');
    expect(words[0]).toBe('node');
    expect(script).toBeGreaterThan(0);
    for (const flag of SERVER_NODE_FLAGS) {
      const at = words.indexOf(flag);
      expect(at).toBeGreaterThan(0);
      expect(at).toBeLessThan(script);
    }
  });

  it('are each accepted by this node and its V8 (an unknown one is refused at start)', () => {
    const run = spawnSync(process.execPath, [...SERVER_NODE_FLAGS, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect([run.status, run.stdout]).toEqual([0, 'ok']);
    // The check refuses what it should: a flag V8 does not have.
    const bad = spawnSync(process.execPath, ['--no-such-v8-flag-here', '-e', '0'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
  });
});
