// Node's `events` for packages bundled into the sandbox: the `events` package (Node's own code,
// kept for browsers). `require('events')` is EventEmitter itself, a plain constructor that older
// packages subclass with `EventEmitter.call(this)` and `util.inherits`, as in Node.
//
// Two additions the package lacks, made here on its prototype:
// - `EventEmitter.errorMonitor` (Node 13.6+): listeners that see every `error` event first;
// - an unhandled `error` event with a non-Error value throws "Unhandled error. (value)"; the
//   package would read `value.message` and say "(undefined)".
import EventEmitter = require('events/events.js');

type ErrorMonitored = EventEmitter & { _events?: Record<string | symbol, unknown> };

const errorMonitor: unique symbol = Symbol('events.errorMonitor');
const packageEmit = EventEmitter.prototype.emit;

Object.assign(EventEmitter, { errorMonitor, captureRejections: false });

EventEmitter.prototype.emit = function emit(this: ErrorMonitored, name: string | symbol, ...args: unknown[]): boolean {
  if (name === 'error') {
    if (this._events?.[errorMonitor] !== undefined) packageEmit.call(this, errorMonitor, ...args);
    const error = args[0];
    if (this.listenerCount('error') === 0 && !(error instanceof Error)) {
      throw Object.assign(new Error(`Unhandled error. (${String(error)})`), { context: error });
    }
  }
  return packageEmit.call(this, name, ...args);
};

export = EventEmitter;
