// Node's `path` (POSIX flavour) for packages bundled into the sandbox: path-browserify, a copy of
// Node's own posix code. Bundled, its `process.cwd()` is the process shim's `/`, so `resolve`
// works from `/` (there is no file system or working directory in the sandbox).
import path = require('path-browserify');

export = path;
