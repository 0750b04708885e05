// Node's `events` for packages bundled into the sandbox. EventEmitter is a plain constructor
// function, not a class, because older packages subclass it with `EventEmitter.call(this)` and
// `util.inherits`; and `require('events')` is EventEmitter itself, as in Node.

type Listener = (...args: unknown[]) => unknown;
type EventName = string | symbol;
interface OnceWrapper extends Listener {
  listener: Listener;
}

/** The emitter state; created lazily because subclasses do not always call the constructor. */
interface EmitterFields {
  _events?: Record<EventName, Listener[]>;
  _maxListeners?: number;
}

/** Node's EventEmitter (synchronous listeners, `error` events throw when nobody listens). */
interface EventEmitter extends EmitterFields {
  on(name: EventName, listener: Listener): this;
  addListener(name: EventName, listener: Listener): this;
  prependListener(name: EventName, listener: Listener): this;
  once(name: EventName, listener: Listener): this;
  prependOnceListener(name: EventName, listener: Listener): this;
  off(name: EventName, listener: Listener): this;
  removeListener(name: EventName, listener: Listener): this;
  removeAllListeners(name?: EventName): this;
  emit(name: EventName, ...args: unknown[]): boolean;
  listeners(name: EventName): Listener[];
  rawListeners(name: EventName): Listener[];
  listenerCount(name: EventName): number;
  eventNames(): EventName[];
  setMaxListeners(n: number): this;
  getMaxListeners(): number;
}

interface EventEmitterConstructor {
  new (options?: unknown): EventEmitter;
  (this: EventEmitter, options?: unknown): void;
  prototype: EventEmitter;
  EventEmitter: EventEmitterConstructor;
  defaultMaxListeners: number;
  captureRejections: boolean;
  errorMonitor: symbol;
  once(emitter: EventEmitter, name: EventName): Promise<unknown[]>;
  listenerCount(emitter: EventEmitter, name: EventName): number;
  init(this: EventEmitter): void;
}

function checkListener(listener: unknown): asserts listener is Listener {
  if (typeof listener !== 'function') {
    throw new TypeError(`The "listener" argument must be of type function. Received ${listener === null ? 'null' : typeof listener}`);
  }
}

function eventsOf(emitter: EmitterFields): Record<EventName, Listener[]> {
  if (!emitter._events || !Object.prototype.hasOwnProperty.call(emitter, '_events')) emitter._events = Object.create(null) as Record<EventName, Listener[]>;
  return emitter._events;
}

function add(emitter: EventEmitter, name: EventName, listener: Listener, prepend: boolean): EventEmitter {
  checkListener(listener);
  const events = eventsOf(emitter);
  // As in Node, `newListener` fires before the listener is added.
  if (events.newListener) emitter.emit('newListener', name, (listener as Partial<OnceWrapper>).listener ?? listener);
  const list = events[name] ?? (events[name] = []);
  if (prepend) list.unshift(listener);
  else list.push(listener);
  return emitter;
}

function onceWrapper(emitter: EventEmitter, name: EventName, listener: Listener): OnceWrapper {
  checkListener(listener);
  let fired = false;
  const wrapper = function (this: unknown, ...args: unknown[]): unknown {
    if (fired) return undefined;
    fired = true;
    emitter.removeListener(name, wrapper);
    return listener.apply(this, args);
  } as OnceWrapper;
  wrapper.listener = listener;
  return wrapper;
}

function initEmitter(emitter: EmitterFields): void {
  eventsOf(emitter);
  emitter._maxListeners = emitter._maxListeners ?? undefined;
}

const EventEmitter = function EventEmitter(this: EventEmitter): void {
  initEmitter(this);
} as unknown as EventEmitterConstructor;

EventEmitter.init = function init(this: EventEmitter): void {
  initEmitter(this);
};
EventEmitter.defaultMaxListeners = 10;
EventEmitter.captureRejections = false;
EventEmitter.errorMonitor = Symbol('events.errorMonitor');

const proto = EventEmitter.prototype;

proto.on = function on(name, listener) {
  return add(this, name, listener, false);
};
proto.addListener = proto.on;
proto.prependListener = function prependListener(name, listener) {
  return add(this, name, listener, true);
};
proto.once = function once(name, listener) {
  return add(this, name, onceWrapper(this, name, listener), false);
};
proto.prependOnceListener = function prependOnceListener(name, listener) {
  return add(this, name, onceWrapper(this, name, listener), true);
};

proto.removeListener = function removeListener(name, listener) {
  checkListener(listener);
  const events = eventsOf(this);
  const list = events[name];
  if (!list) return this;
  // The most recently added instance goes first, as in Node.
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i] === listener || (list[i] as Partial<OnceWrapper>).listener === listener) {
      const [removed] = list.splice(i, 1);
      if (list.length === 0) delete events[name];
      if (events.removeListener) this.emit('removeListener', name, (removed as Partial<OnceWrapper>).listener ?? removed);
      break;
    }
  }
  return this;
};
proto.off = proto.removeListener;

proto.removeAllListeners = function removeAllListeners(name) {
  const events = eventsOf(this);
  if (name === undefined) {
    for (const key of Reflect.ownKeys(events)) if (key !== 'removeListener') this.removeAllListeners(key);
    delete events.removeListener;
    return this;
  }
  const list = events[name];
  if (!list) return this;
  if (!events.removeListener) delete events[name];
  else for (let i = list.length - 1; i >= 0; i--) this.removeListener(name, list[i]);
  return this;
};

proto.emit = function emit(name, ...args) {
  const events = eventsOf(this);
  if (name === 'error' && events[EventEmitter.errorMonitor]) {
    for (const listener of [...events[EventEmitter.errorMonitor]]) listener.apply(this, args);
  }
  const list = events[name];
  if (!list || list.length === 0) {
    if (name === 'error') {
      const error = args[0];
      if (error instanceof Error) throw error;
      const wrapped = new Error(`Unhandled error. (${String(error)})`) as Error & { context?: unknown };
      wrapped.context = error;
      throw wrapped;
    }
    return false;
  }
  // A copy: listeners added or removed while emitting do not change this emit.
  for (const listener of [...list]) listener.apply(this, args);
  return true;
};

proto.listeners = function listeners(name) {
  return (eventsOf(this)[name] ?? []).map((l) => (l as Partial<OnceWrapper>).listener ?? l);
};
proto.rawListeners = function rawListeners(name) {
  return [...(eventsOf(this)[name] ?? [])];
};
proto.listenerCount = function listenerCount(name) {
  return eventsOf(this)[name]?.length ?? 0;
};
proto.eventNames = function eventNames() {
  return Reflect.ownKeys(eventsOf(this));
};
proto.setMaxListeners = function setMaxListeners(n) {
  if (typeof n !== 'number' || n < 0 || Number.isNaN(n)) throw new RangeError(`The value of "n" is out of range. Received ${String(n)}`);
  this._maxListeners = n;
  return this;
};
proto.getMaxListeners = function getMaxListeners() {
  return this._maxListeners ?? EventEmitter.defaultMaxListeners;
};

EventEmitter.once = function once(emitter, name) {
  return new Promise((resolve, reject) => {
    const onError = (error: unknown) => {
      emitter.removeListener(name, onEvent);
      reject(error);
    };
    const onEvent = (...args: unknown[]) => {
      if (name !== 'error') emitter.removeListener('error', onError);
      resolve(args);
    };
    emitter.once(name, onEvent);
    if (name !== 'error') emitter.once('error', onError);
  });
};
EventEmitter.listenerCount = (emitter, name) => emitter.listenerCount(name);
EventEmitter.EventEmitter = EventEmitter;

export = EventEmitter;
