import type { NewSluiceEvent, SluiceEvent, WorkflowEventEmitted } from './events';
import { EventTypes } from './events';
import type {
  QueuedSend, StepError, WorkflowRunFinished, WorkflowRunStarted, WorkflowSendPerformed, WorkflowStepCompleted,
} from './workflow-events';

/** The events of a `workflowrun-<runId>` stream. */
export type RunStreamEvent = Extract<SluiceEvent, {
  type: 'workflow.run_started.v1' | 'workflow.step_completed.v1' | 'workflow.send_performed.v1' | 'workflow.run_finished.v1'
    | 'workflow.event_emitted.v1';
}>;

/** A run folded from its stream. */
export interface RunState {
  runId: string;
  revision: bigint;
  started?: WorkflowRunStarted;
  steps: WorkflowStepCompleted[];
  /** `<stepIndex>:<sendIndex>` of every send with a recorded outcome. */
  sendsDone: Set<string>;
  emitted: WorkflowEventEmitted[];
  finished?: WorkflowRunFinished;
}

export function initialRunState(runId: string): RunState {
  return { runId, revision: -1n, steps: [], sendsDone: new Set(), emitted: [] };
}

export function evolveRun(state: RunState, e: RunStreamEvent, revision: bigint): RunState {
  state.revision = revision;
  switch (e.type) {
    case 'workflow.run_started.v1': state.started = e.data; break;
    case 'workflow.step_completed.v1': state.steps[e.data.index] = e.data; break;
    case 'workflow.send_performed.v1': state.sendsDone.add(`${e.data.stepIndex}:${e.data.sendIndex}`); break;
    case 'workflow.event_emitted.v1': state.emitted.push(e.data); break;
    case 'workflow.run_finished.v1': state.finished = e.data; break;
  }
  return state;
}

/** What the runner must do next for a run, derived from its recorded events only (so a crash resumes here). */
export type NextRunAction =
  | { type: 'runStep'; index: number }
  | { type: 'performSend'; stepIndex: number; sendIndex: number; send: QueuedSend }
  | { type: 'finish' }
  | { type: 'none' };

/**
 * The first thing not yet recorded: a completed step's unperformed sends (in order), else the
 * first step without an outcome, else the end. Nothing after a failed or exiting step runs.
 */
export function nextRunAction(state: RunState): NextRunAction {
  if (!state.started || state.finished) return { type: 'none' };
  const steps = state.started.steps;
  for (let i = 0; i < steps.length; i++) {
    const done = state.steps[i];
    if (!done) return { type: 'runStep', index: i };
    if (done.status === 'failed') return { type: 'finish' };
    for (let j = 0; j < done.sends.length; j++) {
      if (!state.sendsDone.has(`${i}:${j}`)) return { type: 'performSend', stepIndex: i, sendIndex: j, send: done.sends[j] };
    }
    if (done.flowExit) return { type: 'finish' };
  }
  return { type: 'finish' };
}

/** The `steps` a step sees: the trigger and every earlier step's `$return_value` and exports. */
export function stepsContext(state: RunState, before: number): Record<string, unknown> {
  const ctx: Record<string, unknown> = { trigger: state.started?.trigger };
  for (let i = 0; i < before; i++) {
    const s = state.steps[i];
    // Not `{ ...s.exports, $return_value }`: a spread followed by a new member gives every object
    // made there a hidden class of its own in V8 11. Exports never hold `__proto__` (the guest's
    // JSON is parsed without it), which Object.assign would take for the prototype.
    if (s) ctx[s.name] = Object.assign({}, s.exports, { $return_value: s.ret ?? null });
  }
  return ctx;
}

export type RunCommand =
  | { type: 'start'; started: WorkflowRunStarted }
  | { type: 'recordStep'; outcome: WorkflowStepCompleted }
  | { type: 'recordSend'; outcome: WorkflowSendPerformed; emitted?: WorkflowEventEmitted }
  | { type: 'finish'; now: number; errorEmitId: string };

export interface RunRejection { code: 'exists' | 'not_started' | 'recorded' | 'finished'; message: string }

function failedStep(state: RunState): WorkflowStepCompleted | undefined {
  return state.steps.find((s) => s?.status === 'failed');
}

/** The `$errors` event of a failed run (API.md: `{error, workflow_id, run_id, step}`). */
function errorEvent(state: RunState, failed: WorkflowStepCompleted, emitId: string, ts: number): WorkflowEventEmitted {
  const s = state.started!;
  const error: StepError = failed.error ?? { name: 'Error', message: 'the step failed' };
  return {
    workflowId: s.workflowId, accountId: s.accountId, runId: s.runId, emitId,
    event: { error: { name: error.name, message: error.message, stack: error.stack }, workflow_id: s.workflowId, run_id: s.runId, step: failed.name },
    meta: { name: '$errors', summary: `${failed.name} failed: ${error.message}`.slice(0, 200), ts },
    ...(s.hops ? { hops: s.hops } : {}),
    deliveryIds: 'ordered',
  };
}

/** What a command on a run records, or why it is refused. Pure: ids and the clock come in the command. */
export function decideRun(state: RunState, c: RunCommand): { events: NewSluiceEvent[] } | { rejected: RunRejection } {
  if (c.type === 'start') {
    if (state.revision >= 0n) return { rejected: { code: 'exists', message: `run ${state.runId} already exists` } };
    return { events: [{ type: EventTypes.workflowRunStarted, data: c.started }] };
  }
  if (!state.started) return { rejected: { code: 'not_started', message: `run ${state.runId} was never started` } };
  if (state.finished) return { rejected: { code: 'finished', message: `run ${state.runId} is over` } };
  const next = nextRunAction(state);
  switch (c.type) {
    case 'recordStep':
      if (next.type !== 'runStep' || next.index !== c.outcome.index) {
        return { rejected: { code: 'recorded', message: `step ${c.outcome.index} of ${state.runId} is not the one to record` } };
      }
      return { events: [{ type: EventTypes.workflowStepCompleted, data: c.outcome }] };
    case 'recordSend': {
      const o = c.outcome;
      if (next.type !== 'performSend' || next.stepIndex !== o.stepIndex || next.sendIndex !== o.sendIndex) {
        return { rejected: { code: 'recorded', message: `send ${o.stepIndex}:${o.sendIndex} of ${state.runId} is not the one to record` } };
      }
      const events: NewSluiceEvent[] = [];
      if (c.emitted) events.push({ type: EventTypes.workflowEventEmitted, data: c.emitted });
      events.push({ type: EventTypes.workflowSendPerformed, data: o });
      return { events };
    }
    case 'finish': {
      if (next.type !== 'finish') return { rejected: { code: 'recorded', message: `run ${state.runId} has work left` } };
      const s = state.started;
      const ran = state.steps.filter(Boolean).length;
      const skipped = s.steps.slice(ran).map((x) => x.name);
      const failed = failedStep(state);
      const exit = state.steps.find((x) => x?.flowExit)?.flowExit;
      // The finish's data is `base` and its status, by Object.assign (not a spread followed by new
      // members, which gives every object made there a hidden class of its own in V8 11).
      const base = { runId: s.runId, workflowId: s.workflowId, accountId: s.accountId, skipped };
      if (failed) {
        return {
          events: [
            { type: EventTypes.workflowEventEmitted, data: errorEvent(state, failed, c.errorEmitId, c.now) },
            { type: EventTypes.workflowRunFinished, data: Object.assign(base, { status: 'failed' as const }) },
          ],
        };
      }
      if (exit) return { events: [{ type: EventTypes.workflowRunFinished, data: Object.assign(base, { status: 'exited' as const, exitReason: exit.reason }) }] };
      return { events: [{ type: EventTypes.workflowRunFinished, data: Object.assign(base, { status: 'succeeded' as const }) }] };
    }
  }
}
