/**
 * Node flags the server runs with: `npm start` passes them (package.json), and so do the tests'
 * and benchmarks' launchers, so what they measure is what users run (a unit test checks that
 * package.json agrees). V8 reads them only at start-up (`v8.setFlagsFromString` is too late).
 *
 * `--max-semi-space-size=32`: V8's young generation may grow to two 32 MB semi-spaces. It was 8 for a
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
 * 32 against 16 (issue 10, stop 47), two A/Bs (`BENCH_AB='/work/main,/work/main;--max-semi-space-size=32'
 * BENCH_SECONDS=8 BENCH_ONLY=ab`, 3 rounds of 1000,200,sat then 4 of 200,sat,1000), paired by round:
 * CPU per event at 200/s 0.846x (1.24, 0.85, 0.78) and 0.689x (0.82, 0.63, 0.65, 0.73), at
 * 1,000/s 0.943x (0.89, 0.94, 1.01) and 0.895x (0.82, 0.86, 0.93, 1.11), at saturation 1.011x and
 * 0.764x with delivered/s 0.968x (0.93, 0.97, 1.12) and 1.335x (1.14, 1.88, 1.35, 1.32); p99 at
 * 200/s 0.82x and 0.61x, at 1,000/s 0.95x and 1.00x; a third (4 rounds of sat,200, the sides
 * swapped): delivered/s at saturation 1.072x (1.09, 1.05, 1.10, 1.02), CPU per event there 0.937x
 * (every round lower), at 200/s 0.959x (0.92 to 1.00). So a few per cent at saturation, every
 * round; the first two A/Bs' large 200/s figures were that day's noise. Idle RSS unchanged (146 and
 * 141 MB 15 s and 45 s after the last call, one e2e run). At 1,000/s a scavenge comes every ~0.3 s
 * with 16 MB and pauses the loop 2-4 ms (its pause follows the survivors, 0.4-0.8 MB, not the
 * space's size), so half as many pauses for the same work. 64 against 32 lost at every rate
 * (stop 48: 1.13x the CPU per event at saturation; docs/architecture.md, "Processes"). Since stop
 * 49 about 60 KB survive a scavenge (no hidden class per event), and 16 was measured again: it
 * cost 1.08-1.15x the CPU per event at 200/s in two A/Bs with the sides swapped, and its figures
 * at saturation followed the side, not the flag (docs/architecture.md, "No hidden class per event").
 *
 * `--no-flush-bytecode` (issue 10, stop 69): V8 drops the bytecode of functions that have not run
 * for a few of its major collections, and an idle server has those (the idle collector's, the
 * memory reducer's): after a minute idle, the first requests recompiled the whole request path.
 * A probe (`IDLE_S=55`: a source and a webhook deployed, 55 s idle, then 400 requests at 200/s,
 * request to its 200), five alternated pairs: the first 50 requests' median 60.8, 26.8, 28.9,
 * 17.2, 12.6 ms without the flag, 18.2, 17.7, 7.3, 11.6, 9.7 ms with it (every pair lower); the
 * server's RSS after the deploys 89.8 / 89.8 and 91.7 / 92.7 MB, 15 s after the load 102.4
 * against 100.9 MB: the bytecode kept is the request path's, which a server runs again anyway.
 * `BENCH_ONLY=afteridle npm run bench` measures it again (alternated pairs; `BENCH_AFTER_IDLE_WHERE=worker`
 * for the sandbox workers, which do not get it: see `worker-node.flags.ts`).
 *
 * `--expose-gc`: gives the server's idle collector (`idle-collector.ts`) a `gc` to call once the
 * server goes idle after a burst. V8 left the garbage of a burst in the heap for as long as the
 * server stayed idle (heap used 61-117 MB, 31 MB of it live); collected, the server's RSS went
 * from 291 to 216 MB. `gc` is a global of the server's own realm only: component code runs in
 * isolated-vm isolates, which do not see it.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32', '--expose-gc', '--no-flush-bytecode'];
