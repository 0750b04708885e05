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
});
