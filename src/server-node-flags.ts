/**
 * Node flags the server runs with: `npm start` passes them (package.json), and so do the tests'
 * and benchmarks' launchers, so what they measure is what users run (a unit test checks that
 * package.json agrees). V8 reads them only at start-up (`v8.setFlagsFromString` is too late).
 *
 * `--max-semi-space-size=8`: V8's young generation grows to two 16 MB semi-spaces while the
 * server starts. At 4 MB the server right after its last call was about 9 MB smaller than at 8,
 * but under load it collected twice as often and promoted more: at 8 MB, alternated 4 rounds
 * (`BENCH_AB='/work/main,/work/main;--max-semi-space-size=8' BENCH_PROFILE_RATES=1000,sat
 * BENCH_ONLY=ab npm run bench`), CPU per event B/A 0.951 at saturation and 0.968 at 1,000/s,
 * delivered/s at saturation 1.058, RSS under saturation about 45 MB lower. Once V8's memory
 * reducer has run (about 10 s idle), 8 MB costs about 3 MB of RSS over 4 (139 against 142 MB, the
 * server and its worker summed).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
