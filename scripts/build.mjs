// Builds dist/ with tsc + tsc-alias. With --if-stale, skips when dist is newer than every source file,
// so `npm start` right after `npm install` builds once and later starts are instant.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const marker = join(root, 'dist', '.build-ok');
function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith('.ts') || e.name.endsWith('.json')) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}
/**
 * Compiles a C or C++ (`.cc`) file of ours into `dist/native/<out>` when the file is newer than the library;
 * without a compiler says so once and goes on (each library's loader falls back without it).
 */
function buildNative(source, out, includes, fallback) {
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs) return;
  mkdirSync(dirname(out), { recursive: true });
  try {
    const cxx = source.endsWith('.cc');
    const compiler = cxx ? process.env.CXX || 'c++' : process.env.CC || 'cc';
    execFileSync(compiler, ['-O2', '-fPIC', '-shared', '-pthread', ...(cxx ? ['-std=c++17'] : []), ...includes.flatMap((dir) => ['-I', dir]), '-o', `${out}.tmp`, source], { cwd: root, stdio: 'inherit' });
    renameSync(`${out}.tmp`, out);
  } catch (error) {
    console.error(`build: could not compile ${source} (${error.message}); ${fallback}`);
  }
}
// The SQLite extension that writes a commit's WAL frames in one call
// (libs/event-store/native/wal-buffer.c), compiled against the headers of the SQLite that
// better-sqlite3 builds. Without a C compiler the store runs without it and says so.
buildNative(
  join(root, 'libs', 'event-store', 'native', 'wal-buffer.c'), join(root, 'dist', 'native', 'wal-buffer.so'),
  [join(root, 'node_modules', 'better-sqlite3', 'deps', 'sqlite3')], 'the event store will write the WAL without it',
);
// The event store's hot write statements run on its connection without better-sqlite3's per-call
// costs (libs/event-store/native/lean-statements.c): an SQLite extension and a Node addon in one
// file, against SQLite's headers (better-sqlite3's) and Node's.
buildNative(
  join(root, 'libs', 'event-store', 'native', 'lean-statements.c'), join(root, 'dist', 'native', 'lean-statements.node'),
  [join(root, 'node_modules', 'better-sqlite3', 'deps', 'sqlite3'), join(dirname(process.execPath), '..', 'include', 'node')],
  'the event store will run its statements through better-sqlite3 alone',
);
// The event store's timer whose stop wakes nothing (libs/event-store/native/loop-timer.c), against
// Node's own headers (node_api.h, uv.h).
buildNative(
  join(root, 'libs', 'event-store', 'native', 'loop-timer.c'), join(root, 'dist', 'native', 'loop-timer.node'),
  [join(dirname(process.execPath), '..', 'include', 'node')], 'the event store will use setTimeout for its linger',
);
// The event store's sync of the WAL that leaves out its inode where that is durable
// (libs/event-store/native/wal-sync.c), against Node's own headers.
buildNative(
  join(root, 'libs', 'event-store', 'native', 'wal-sync.c'), join(root, 'dist', 'native', 'wal-sync.node'),
  [join(dirname(process.execPath), '..', 'include', 'node')], 'the event store will fdatasync its WAL',
);
// The server's digests per delivery (libs/native/native/lean-digest.c): OpenSSL's SHA routines,
// resolved from the Node process, with the headers of the OpenSSL Node ships (include/node/openssl).
buildNative(
  join(root, 'libs', 'native', 'native', 'lean-digest.c'), join(root, 'dist', 'native', 'lean-digest.node'),
  [join(dirname(process.execPath), '..', 'include', 'node')], 'signatures and derived ids will be made by node:crypto',
);
// Node's own headers (node_api.h, and V8's), where Node is installed: /usr/bin/node has /usr/include/node.
buildNative(
  join(root, 'libs', 'sandbox', 'native', 'sync-watchdog.cc'), join(root, 'dist', 'native', 'sync-watchdog.node'),
  [join(dirname(process.execPath), '..', 'include', 'node')], 'sandbox workers will enter every run asynchronously',
);
if (process.argv.includes('--if-stale') && existsSync(marker)) {
  const srcTime = Math.max(...['src', 'apps', 'libs', 'bench'].filter((d) => existsSync(join(root, d))).map((d) => newest(join(root, d))), statSync(join(root, 'tsconfig.json')).mtimeMs);
  if (statSync(marker).mtimeMs >= srcTime) process.exit(0);
}
const bin = (n) => join(root, 'node_modules', '.bin', n);
execFileSync(bin('tsc'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
execFileSync(bin('tsc-alias'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
const { writeFileSync } = await import('node:fs');
writeFileSync(marker, new Date().toISOString());
