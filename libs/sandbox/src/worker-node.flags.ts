import { setFlagsFromString } from 'node:v8';

/**
 * Young generation of a sandbox worker's own heap (MB per semi-space). The worker's JavaScript
 * only relays messages between the server and the isolates, yet V8 let its young generation grow
 * to two 16 MB semi-spaces under load and kept them for as long as the worker lived: 16 MB of
 * new space holding 3 MB after a saturation phase, idle (a worker cannot collect at idle as the
 * server does: `--expose-gc` would give `gc` to every isolate). 2 MB caps it at 4 MB.
 */
export const WORKER_SEMI_SPACE_MB = 2;

/**
 * Node flags a sandbox worker starts with. `--no-node-snapshot`: isolated-vm needs it on Node 20
 * (FACTS.md). `--max-semi-space-size` is for the worker's own heap only: see
 * {@link releaseHostOnlyFlags}. Not `--no-flush-bytecode`, which the server has: it would reach
 * the component isolates too, and the first requests after a minute idle were no faster with it
 * (`BENCH_ONLY=afteridle BENCH_AFTER_IDLE_WHERE=worker`, stop 70: to the receipt 1.7 and 2.0 ms
 * without, 2.0 and 3.5 ms with, two alternated pairs).
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--no-node-snapshot', `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];

/**
 * Takes back, once the worker's own heap is configured, the flags that must not reach the
 * isolates it creates. V8 reads `--max-semi-space-size` whenever it sets up a heap, and the flag
 * overrides the young generation isolated-vm derives from an isolate's memory limit (2 MB for
 * 128 MB), so a guest would otherwise get the worker's size instead. Call it before the first
 * isolate is created.
 */
export function releaseHostOnlyFlags(): void {
  setFlagsFromString('--max-semi-space-size=0');
}
