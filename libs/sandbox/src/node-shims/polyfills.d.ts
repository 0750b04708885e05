// Types of the npm polyfills the shims re-export: they ship none, and each mirrors a Node module.

declare module 'events/events.js' {
  import { EventEmitter } from 'node:events';
  export = EventEmitter;
}

declare module 'path-browserify' {
  import { posix } from 'node:path';
  export = posix;
}
