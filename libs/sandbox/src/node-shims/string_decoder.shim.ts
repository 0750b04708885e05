// Node's `string_decoder`: the npm `string_decoder` package (Node's own code kept for browsers),
// bundled once over the buffer shim (see PREBUILT_SHIMS in component.bundler.ts).
import decoder = require('string_decoder/lib/string_decoder.js');

export = decoder;
