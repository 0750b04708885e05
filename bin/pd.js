#!/usr/bin/env node
'use strict';
// The `pd` command (package.json "bin"): runs the built client, dist/apps/cli/main.js, in a node
// started with --no-warnings=ExperimentalWarning (the admin commands load ESM-only packages through
// require(), which Node 20 announces on every start). Exit code and signals pass through.
const { spawn } = require('node:child_process');
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { isatty } = require('node:tty');

const root = join(__dirname, '..');
const main = join(root, 'dist', 'apps', 'cli', 'main.js');
if (!existsSync(main)) {
  process.stderr.write(`error: pd is not built yet: run npm install (or npm run build) in ${root}\n`);
  process.exit(1);
}
const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', main, ...process.argv.slice(2)], { stdio: 'inherit' });
const forward = (signal) => () => {
  // Ctrl-C in a terminal reaches the child directly (same foreground process group): sending it
  // again would stop `pd dev` in the middle of its clean-up. A SIGINT sent to this process alone
  // (a script's kill), and every other signal, is passed on.
  if (signal === 'SIGINT' && isatty(0)) return;
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward(signal));
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
