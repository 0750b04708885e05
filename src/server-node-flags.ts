/**
 * Node flags the server runs with: `npm start` passes them (package.json), and so do the tests'
 * and benchmarks' launchers, so what they measure is what users run (a unit test checks that
 * package.json agrees). V8 reads them only at start-up (`v8.setFlagsFromString` is too late).
 *
 * `--max-semi-space-size=8`: V8's young generation grows to two 16 MB semi-spaces while the
 * server starts. At 4 MB the server right after its last call was about 9 MB smaller than at 8,
 * but under load it collected twice as often and promoted more. At 8 MB, in two alternated A/B
 * runs of 4 rounds each (`BENCH_AB='/work/main;--max-semi-space-size=4,/work/main'
 * BENCH_PROFILE_RATES=1000,200,sat BENCH_ONLY=ab npm run bench`): CPU per event at saturation
 * B/A 0.951 and 0.961, delivered/s at saturation 1.058 and 1.048, RSS under saturation lower; at
 * 1,000/s and 200/s no difference beyond the noise (0.968 and 1.041; 1.018). Once V8's memory
 * reducer has run (about 10 s idle), 8 MB costs about 3 MB of RSS over 4 (about 142 against 139
 * MB, the server and its worker summed).
 *
 * `--expose-gc`: gives the server's idle collector (`idle-collector.ts`) a `gc` to call once the
 * server goes idle after a burst. V8 left the garbage of a burst in the heap for as long as the
 * server stayed idle (heap used 61-117 MB, 31 MB of it live); collected, the server's RSS went
 * from 291 to 216 MB. `gc` is a global of the server's own realm only: component code runs in
 * isolated-vm isolates, which do not see it.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--expose-gc'];
