// Node's `stream` for packages bundled into the sandbox: `stream-browserify` (Node's streams as
// readable-stream 3 keeps them for browsers), bundled once with browser resolution (see
// PREBUILT_SHIMS in component.bundler.ts). Added here what Node has and the package lacks:
// `Readable.from` (its browser variant throws) and `stream.promises` (`pipeline`, `finished`).
import Stream = require('stream-browserify');

type Readable = InstanceType<typeof Stream.Readable>;

/** Node's `Readable.from`: strings and buffers are one chunk; other iterables are read item by item. */
function from(iterable: unknown, options: Record<string, unknown> = {}): Readable {
  if (typeof iterable === 'string' || iterable instanceof Uint8Array) {
    const readable = new Stream.Readable({ objectMode: true, ...options, read() {} });
    readable.push(iterable);
    readable.push(null);
    return readable;
  }
  const source = iterable as { [Symbol.asyncIterator]?: () => AsyncIterator<unknown>; [Symbol.iterator]?: () => Iterator<unknown> };
  let iterator: AsyncIterator<unknown> | Iterator<unknown>;
  const asyncFactory = source?.[Symbol.asyncIterator];
  const syncFactory = source?.[Symbol.iterator];
  if (typeof asyncFactory === 'function') iterator = asyncFactory.call(source);
  else if (typeof syncFactory === 'function') iterator = syncFactory.call(source);
  else throw new TypeError('The "iterable" argument must be an instance of Iterable');
  let reading = false;
  const readable: Readable = new Stream.Readable({
    objectMode: true,
    highWaterMark: 1,
    ...options,
    read() {
      if (reading) return;
      reading = true;
      void (async () => {
        try {
          for (;;) {
            const { value, done } = await iterator.next();
            if (done) {
              readable.push(null);
              return;
            }
            const item = await value;
            if (item === null) throw new TypeError('May not write null values to stream');
            if (!readable.push(item)) return;
          }
        } catch (error) {
          readable.destroy(error as Error);
        } finally {
          reading = false;
        }
      })();
    },
    destroy(error, callback) {
      const finish = (iterator as AsyncIterator<unknown>).return;
      Promise.resolve(typeof finish === 'function' ? finish.call(iterator) : undefined).then(() => callback(error), callback);
    },
  });
  return readable;
}

function pipelinePromise(...streams: unknown[]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    (Stream.pipeline as (...args: unknown[]) => void)(...streams, (error?: Error | null) => (error ? reject(error) : resolve()));
  });
}

function finishedPromise(stream: unknown, options?: unknown): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const callback = (error?: Error | null) => (error ? reject(error) : resolve());
    if (options === undefined) (Stream.finished as (...args: unknown[]) => void)(stream, callback);
    else (Stream.finished as (...args: unknown[]) => void)(stream, options, callback);
  });
}

// readable-stream's classes extend EventEmitter directly; in Node they extend the legacy Stream, and
// packages test `x instanceof stream.Stream`. Stream.prototype itself extends EventEmitter's, so
// putting it in between changes nothing else (each class keeps its own pipe).
for (const Class of [Stream.Readable, Stream.Writable]) {
  if (!(Class.prototype instanceof Stream)) Object.setPrototypeOf(Class.prototype, Stream.prototype);
}
Object.assign(Stream.Readable, { from });
Object.assign(Stream, { promises: { pipeline: pipelinePromise, finished: finishedPromise } });

export = Stream;
