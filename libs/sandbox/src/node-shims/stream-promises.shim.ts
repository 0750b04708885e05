// Node's `stream/promises`: the promise forms that the `stream` shim adds (`stream.promises`).
import Stream = require('sluice-node:stream');

export = (Stream as unknown as { promises: { pipeline: unknown; finished: unknown } }).promises;
