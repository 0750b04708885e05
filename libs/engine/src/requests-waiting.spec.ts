import { RequestsWaiting, type RequestsWaitingLimits } from './requests-waiting';

const LIMITS: RequestsWaitingLimits = { maxRuns: 10, maxRunsPerAccount: 6, maxRunsPerSource: 3, maxBytes: 1000, maxBytesPerAccount: 600, maxBytesPerEndpoint: 300 };

/** A promise settled from outside: a request's run, over when the test says so. */
function run() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const over = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { over, resolve, reject };
}
const settled = () => new Promise((r) => setImmediate(r));

const source = (accountId: string, sourceId: string) => ({ accountId, sourceId, customResponse: false });
const workflow = (accountId: string, workflowId: string) => ({ accountId, workflowId, customResponse: false });

describe('RequestsWaiting: the caps on requests taken by endpoints and not yet run', () => {
  it('a source holds maxRunsPerSource requests; its account\'s other sources and the other accounts still have room', async () => {
    const w = new RequestsWaiting(LIMITS);
    const s1 = source('a', 's1');
    const runs = [run(), run(), run()];
    for (const r of runs) {
      expect(w.refusal(s1, 1)).toBeUndefined();
      w.track(s1, 1, r.over);
    }
    expect(w.refusal(s1, 1)).toBe('source_runs');
    expect(w.of('s1')).toEqual({ runs: 3, bytes: 3, full: true });
    expect(w.refusal(source('a', 's2'), 1)).toBeUndefined();
    expect(w.refusal(source('b', 's3'), 1)).toBeUndefined();
    // A workflow's lane has its own cap on runs: only its bytes count here.
    const wf = workflow('b', 'p1');
    for (let i = 0; i < 4; i++) w.track(wf, 1, run().over);
    expect(w.refusal(wf, 1)).toBeUndefined();
    runs[0].resolve();
    await settled();
    expect(w.of('s1')).toEqual({ runs: 2, bytes: 2, full: false });
    expect(w.refusal(s1, 1)).toBeUndefined();
  });

  it('bytes: per endpoint, per account and in all, each naming what it met', () => {
    const w = new RequestsWaiting(LIMITS);
    w.track(source('a', 's1'), 250, run().over);
    expect(w.refusal(source('a', 's1'), 51)).toBe('endpoint_bytes');
    expect(w.refusal(source('a', 's1'), 50)).toBeUndefined();
    w.track(source('a', 's2'), 300, run().over);
    expect(w.refusal(source('a', 's3'), 51)).toBe('account_bytes');
    expect(w.refusal(source('a', 's3'), 50)).toBeUndefined();
    w.track(source('b', 's4'), 300, run().over);
    w.track(source('c', 's5'), 100, run().over);
    // 950 in all: the process's cap is met before the account's (c holds 100 of its 600).
    expect(w.refusal(source('c', 's6'), 51)).toBe('bytes');
    expect(w.of('s2')).toEqual({ runs: 1, bytes: 300, full: false });
  });

  it('a request alone is not refused for its size: a cap below one body does not shut an endpoint for good', async () => {
    const w = new RequestsWaiting(LIMITS);
    const s1 = source('a', 's1');
    expect(w.refusal(s1, 5000)).toBeUndefined();
    const r = run();
    w.track(s1, 5000, r.over);
    expect(w.refusal(s1, 1)).toBe('bytes');
    r.resolve();
    await settled();
    expect(w.refusal(s1, 5000)).toBeUndefined();
  });

  it('runs: in all and per account; a failed run is released like one that ran, and its error reported', async () => {
    const w = new RequestsWaiting(LIMITS);
    const failing = run();
    const errors: unknown[] = [];
    w.track(source('a', 's0'), 0, failing.over, (e) => errors.push(e));
    for (let i = 1; i < 6; i++) w.track(source('a', `s${i}`), 0, run().over);
    expect(w.refusal(source('a', 's9'), 0)).toBe('account');
    for (let i = 0; i < 4; i++) w.track(source('b', `t${i}`), 0, run().over);
    expect(w.refusal(source('c', 'u0'), 0)).toBe('process');
    failing.reject(new Error('boom'));
    await settled();
    expect(errors).toEqual([new Error('boom')]);
    expect(w.of('s0')).toEqual({ runs: 0, bytes: 0, full: false });
    expect(w.refusal(source('a', 's9'), 0)).toBeUndefined();
  });
});
