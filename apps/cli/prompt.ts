import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';

/** Reads one line on the terminal without echoing it (secret props, API keys); the question goes to stderr. */
export async function askHidden(question: string): Promise<string> {
  const silent = new Writable({ write: (_chunk, _enc, done) => done() });
  // The interface puts the terminal in raw mode (no echo by the terminal itself) before the
  // question is shown, so that nothing typed after it appears is echoed.
  const rl = createInterface({ input: process.stdin, output: silent, terminal: true });
  process.stderr.write(question);
  try {
    return await rl.question('');
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}
