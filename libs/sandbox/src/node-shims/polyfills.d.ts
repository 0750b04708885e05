// Types of the npm polyfills the shims re-export: they ship none, and each mirrors a Node module.

declare module 'events/events.js' {
  import { EventEmitter } from 'node:events';
  export = EventEmitter;
}

declare module 'path-browserify' {
  import { posix } from 'node:path';
  export = posix;
}

declare module 'stream-browserify' {
  import Stream = require('node:stream');
  export = Stream;
}

declare module 'browserify-zlib' {
  import zlib = require('node:zlib');
  export = zlib;
}

declare module 'string_decoder/lib/string_decoder.js' {
  export { StringDecoder } from 'node:string_decoder';
}

// Another shim, reached through the bundler (so a prebuilt shim is the same module everywhere).
declare module 'sluice-node:stream' {
  import Stream = require('node:stream');
  export = Stream;
}
