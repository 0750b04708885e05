import { createEgress, createStreamEgress } from './egress';
import { runChain } from './invocation.chain';
import { IsolatePool, NEED_BUNDLE } from './isolate.pool';
import { MessageBatcher } from './message.batcher';
import { crashError } from './sandbox-error.factory';
import type { DescribeOutcome, SupervisorMessage, WorkerConfig, WorkerMessage } from './sandbox.protocol';
import type { SandboxResult } from './sandbox.types';
import { releaseHostOnlyFlags } from './worker-node.flags';

// Entry point of a sandbox worker process (forked by SandboxSupervisor with WORKER_NODE_FLAGS).
// Every isolate lives here, never in the server process: a guest can crash the process that hosts
// it (catastrophic OOM), and then only this worker dies.

const outgoing = new MessageBatcher<WorkerMessage>((batch) => {
  if (process.connected) process.send?.(batch);
});

function send(message: WorkerMessage): void {
  outgoing.push(message);
}

function internalFailure(error: unknown): SandboxResult {
  const detail = error instanceof Error ? error.message : String(error);
  const failure = crashError(detail);
  return { ok: false, error: failure, emits: [], logs: [{ level: 'error', message: `${failure.name}: ${failure.message}`, ts: Date.now() }], dbWrites: [], durationMs: 0, cpuMs: 0 };
}

function handle(pool: IsolatePool, message: SupervisorMessage): void {
  switch (message.t) {
    case 'invoke': {
      const { id } = message;
      const { inv } = message;
      // The chained steps' bundles are kept whether the chain reaches them or not (the supervisor counts them as sent).
      if (inv.chain) for (const link of inv.chain.links) pool.keepBundle(link.inv.codeId, link.inv.bundle);
      const running = pool.invoke(inv);
      if (running === NEED_BUNDLE) send({ t: 'needBundle', id });
      else {
        // A workflow step with steps chained after it: they run here before the result goes back.
        const answered = inv.chain ? running.then((result) => runChain((next) => {
          // A chained step belongs to the same workflow, so to the same account.
          if (next.account === undefined) next.account = inv.account;
          return pool.invoke(next);
        }, inv, result)) : running;
        answered.then((result) => send({ t: 'result', id, result }), (error: unknown) => send({ t: 'result', id, result: internalFailure(error) }));
      }
      return;
    }
    case 'describe': {
      const { id } = message;
      const running = pool.describe(message.codeId, message.bundle);
      if (running === NEED_BUNDLE) send({ t: 'needBundle', id });
      else {
        running.then(
          (outcome: DescribeOutcome) => send({ t: 'described', id, outcome }),
          (error: unknown) => send({ t: 'described', id, outcome: { error: crashError(String(error)) } }),
        );
      }
      return;
    }
    case 'ping':
      send({ t: 'pong', id: message.id });
      return;
  }
}

function main(): void {
  releaseHostOnlyFlags();
  const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
  const pool = new IsolatePool({ limits: config.limits, output: config.output, egress: createEgress(config.egress), streamEgress: createStreamEgress(config.egress), maxIsolates: config.maxIsolates, syncEntries: config.syncEntries, syncCooldownMs: config.syncCooldownMs });
  process.on('message', (batch: SupervisorMessage[]) => {
    for (const message of batch) handle(pool, message);
  });
  // The supervisor is gone: nobody can receive results any more.
  process.on('disconnect', () => {
    pool.dispose();
    process.exit(0);
  });
  send({ t: 'ready' });
}

if (require.main === module) main();
