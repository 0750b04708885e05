// The one function of the domain the worker needs, by its own file: the domain's index would load
// all of it into every worker.
import { resolveReferences } from '../../domain/src/workflow-references';
import type { SandboxInvocation, SandboxResult, SandboxSend } from './sandbox.types';

/** What runs one invocation in the worker (the isolate pool's `invoke`). */
export type ChainInvoke = (inv: SandboxInvocation) => Promise<SandboxResult> | symbol;

/**
 * Sends that stay in the server (an emit, a live SSE message): the server records them after the
 * step, before the next, and their records need no fsync (the runner's `durabilityOf`). The other
 * kinds leave the server once their step's record is durable. One rule for both, so the chain
 * stops exactly where the runner must wait.
 */
export function sendStaysInServer(kind: SandboxSend['kind']): boolean {
  return kind === 'emit' || kind === 'sse';
}

/**
 * Whether the step after one with this result may run in the worker at once. Not after a failure
 * (the run ends), a `$.respond` (its caller is answered before the next step starts), a
 * `$.flow.exit`, or a send that leaves the server (performed once the step's record is durable,
 * before the next step starts). The server runs whatever follows as it would without a chain.
 */
export function chainGoesOn(result: SandboxResult): boolean {
  return result.ok && !result.httpResponse && !result.flowExit && (result.sends ?? []).every((send) => sendStaysInServer(send.kind));
}

/**
 * Runs the chained steps of `first` (a workflow step whose result is `result`), one after the
 * other, each with its `{{steps...}}` references resolved against the trigger and the results
 * before it, exactly as the server's `stepsContext` and `resolveReferences` would have; stops at
 * the first result after which the chain may not go on, at a step whose code this worker lacks
 * (the server then sends it with its bundle), and at a step that could not start. Returns `result`
 * with the chained results that ran.
 */
export async function runChain(invoke: ChainInvoke, first: SandboxInvocation, result: SandboxResult): Promise<SandboxResult> {
  const chain = first.chain;
  if (!chain || chain.links.length === 0 || !chainGoesOn(result)) return result;
  const chained: SandboxResult[] = [];
  let steps = first.action?.steps ?? {};
  let name = chain.name;
  let last = result;
  for (const link of chain.links) {
    // A new object per step, as the server's stepsContext makes one (the earlier step's `steps`
    // is its own), and its member set the way stepsContext sets it.
    const next: Record<string, unknown> = Object.assign({}, steps);
    next[name] = Object.assign({}, last.exports ?? {}, { $return_value: last.returnValue ?? null });
    steps = next;
    const inv = Object.assign({}, link.inv, { props: resolveReferences(link.inv.props, steps), action: { steps } });
    const running = invoke(inv);
    if (typeof running === 'symbol') break;
    try {
      last = await running;
    } catch {
      break;
    }
    chained.push(last);
    if (!chainGoesOn(last)) break;
    name = link.name;
  }
  return chained.length > 0 ? Object.assign({}, result, { chained }) : result;
}
