import { baseType, type ComponentDefinition } from '@app/domain';
import type { SandboxInvocation, SandboxLog, SandboxResult } from '@app/sandbox';

/**
 * The `$.service.db` store of one action run: the values the run starts from and their size in
 * UTF-8 bytes. `POST /v1/actions/run` gives a throwaway empty one and drops the writes; a
 * workflow keys one per step and records the run's `dbWrites` (SandboxResult) into it.
 */
export interface ActionStore {
  db: Record<string, unknown>;
  dbBytes: number;
}

/** An empty store: what an action run gets when nobody keeps its writes. */
export function throwawayActionStore(): ActionStore {
  return { db: {}, dbBytes: 0 };
}

/** What an action invocation needs of the saved component. */
export interface ActionCode {
  definition: Pick<ComponentDefinition, 'props'>;
  bundle: string;
  codeHash: string;
}

/**
 * The sandbox invocation of an action's `run({ $, steps })`. `instanceId` names who owns the warm
 * isolate (its module state): a workflow step, or an account's ad-hoc runs. `props` are the
 * opened runtime values (secrets decrypted). The workflow runner builds its steps' invocations
 * with this too, so both paths give an action the same `this`.
 */
export function actionInvocation(
  code: ActionCode,
  opts: { instanceId: string; props: Record<string, unknown>; steps: Record<string, unknown>; store?: ActionStore },
): SandboxInvocation {
  const dbProps = code.definition.props.filter((p) => baseType(p.type).base === '$.service.db').map((p) => p.name);
  const store = opts.store ?? throwawayActionStore();
  return {
    codeId: code.codeHash,
    instanceId: opts.instanceId,
    bundle: code.bundle,
    entry: 'run',
    props: opts.props,
    dbProps,
    ...(dbProps.length > 0 ? { db: store.db, dbBytes: store.dbBytes } : {}),
    action: { steps: opts.steps },
  };
}

/** One observation of an action run (the original's `os`): a console line or the error. */
export type ActionObservation =
  | { k: `console.${SandboxLog['level']}`; ts: number; msg: string }
  | { k: 'error'; ts: number; err: { name: string; message: string; stack?: string } };

/**
 * The run's logs and error as `os`. The sandbox repeats a failed run's error as its last log line;
 * here it is the `error` observation instead, so it is not shown twice.
 */
export function actionObservations(result: SandboxResult): ActionObservation[] {
  const logs = [...result.logs];
  const error = result.error;
  if (error) {
    const last = logs[logs.length - 1];
    if (last && last.level === 'error' && last.message === (error.stack ?? `${error.name}: ${error.message}`)) logs.pop();
  }
  const os: ActionObservation[] = logs.map((l) => ({ k: `console.${l.level}` as const, ts: l.ts, msg: l.message }));
  if (!result.ok && error) {
    os.push({ k: 'error', ts: Date.now(), err: { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) } });
  }
  return os;
}
