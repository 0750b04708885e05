/**
 * Node flags the server runs with: `npm start` passes them (package.json), and so do the tests'
 * and benchmarks' launchers, so what they measure is what users run (a unit test checks that
 * package.json agrees). V8 reads them only at start-up (`v8.setFlagsFromString` is too late).
 *
 * `--max-semi-space-size=16`: V8's young generation may grow to two 16 MB semi-spaces (Node's
 * own limit here, said explicitly so another Node's default does not move it). It was 8 for a
 * while: at 4 MB the server right after its last call was about 9 MB smaller than at 8, but under
 * load it collected twice as often and promoted more; 8 against 4, in two alternated A/B runs of
 * 4 rounds each: CPU per event at saturation B/A 0.951 and 0.961, delivered/s 1.058 and 1.048.
 * 16 against 8 was first no better (CPU per event 0.99x at saturation, 1.04x at 1,000/s, 3
 * rounds); since requests stop lingering on a saturated loop (more of them in flight there), two
 * A/Bs of 4 rounds (`BENCH_AB='/work/main,/work/main;--max-semi-space-size=16'
 * BENCH_PROFILE_RATES=sat,1000 BENCH_ONLY=ab npm run bench`) gave delivered/s at saturation 1.08x
 * paired by round in both (1.12, 0.90, 1.23, 1.04 and 0.98, 0.97, 1.26, 1.19), CPU per event
 * 0.91x and 0.94x, at 1,000/s 1.00x; RSS under load 40-50 MB more, idle RSS the same (166 and
 * 147 MB against 168 and 147, 162 and 141 against 163 and 138, 1 s and 15 s after the last call:
 * the idle collector gives the young generation back either way).
 *
 * `--expose-gc`: gives the server's idle collector (`idle-collector.ts`) a `gc` to call once the
 * server goes idle after a burst. V8 left the garbage of a burst in the heap for as long as the
 * server stayed idle (heap used 61-117 MB, 31 MB of it live); collected, the server's RSS went
 * from 291 to 216 MB. `gc` is a global of the server's own realm only: component code runs in
 * isolated-vm isolates, which do not see it.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--expose-gc'];
