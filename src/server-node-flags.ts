/**
 * Node flags the server runs with: `npm start` passes them (package.json), and so do the tests'
 * and benchmarks' launchers, so what they measure is what users run (a unit test checks that
 * package.json agrees). V8 reads them only at start-up (`v8.setFlagsFromString` is too late).
 *
 * `--max-semi-space-size=4`: V8's young generation grows to two 16 MB semi-spaces while the
 * server starts and keeps them; capped at 4 MB, the idle server is about 12 MB smaller (issue
 * 10, `BENCH_ONLY=idle npm run bench`). Short-lived objects are collected a little more often.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
