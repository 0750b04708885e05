import {
  decideRun, event, EventTypes, evolveRun, initialRunState, nextRunAction, RunCommand, RunState, RunStreamEvent, stepsContext,
  WorkflowRunStarted, WorkflowStepCompleted,
} from '@app/domain';

/** A run's decisions, given / when / then: its past events in, a command, events or a refusal out. No I/O. */
const RUN = 'run_1';
const started: WorkflowRunStarted = {
  runId: RUN, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 2, customResponse: false,
  steps: ['one', 'two', 'three'].map((name) => ({ name, componentId: `sc_${name}`, configuredProps: {} })),
  trigger: { event: { n: 1 }, context: { emitter_id: 'p_1', emit_id: 'e1', ts: 1, trigger: 'manual' } },
};

function given(...history: RunStreamEvent[]): RunState {
  const state = initialRunState(RUN);
  history.forEach((e, i) => evolveRun(state, e, BigInt(i)));
  return state;
}
const when = (state: RunState, c: RunCommand) => decideRun(state, c);

const start = event(EventTypes.workflowRunStarted, started);
function step(index: number, over: Partial<WorkflowStepCompleted> = {}) {
  return event(EventTypes.workflowStepCompleted, {
    runId: RUN, workflowId: 'p_1', index, name: started.steps[index].name, status: 'succeeded', ret: index * 10, exports: { [`e${index}`]: index },
    logs: [], durationMs: 1, sends: [], ...over,
  });
}
const sendDone = (stepIndex: number, sendIndex: number) =>
  event(EventTypes.workflowSendPerformed, { runId: RUN, workflowId: 'p_1', stepIndex, sendIndex, kind: 'http', ok: true });

describe('workflow runs: what comes next is derived from the recorded events only', () => {
  it('given a started run, then its first step runs', () => {
    expect(nextRunAction(given(start))).toEqual({ type: 'runStep', index: 0 });
  });

  it('given step 1 recorded (a crash came after it), then the run resumes at step 2, never step 1 again', () => {
    expect(nextRunAction(given(start, step(0)))).toEqual({ type: 'runStep', index: 1 });
  });

  it('given a step with queued sends, then its unperformed sends come before the next step, in order', () => {
    const sends = [{ kind: 'http' as const, params: { url: 'http://a' } }, { kind: 'emit' as const, params: { raw_event: 1 } }];
    expect(nextRunAction(given(start, step(0, { sends })))).toEqual({ type: 'performSend', stepIndex: 0, sendIndex: 0, send: sends[0] });
    expect(nextRunAction(given(start, step(0, { sends }), sendDone(0, 0)))).toEqual({ type: 'performSend', stepIndex: 0, sendIndex: 1, send: sends[1] });
    expect(nextRunAction(given(start, step(0, { sends }), sendDone(0, 0), sendDone(0, 1)))).toEqual({ type: 'runStep', index: 1 });
  });

  it('given every step recorded, then the run finishes succeeded, with nothing skipped', () => {
    const state = given(start, step(0), step(1), step(2));
    expect(nextRunAction(state)).toEqual({ type: 'finish' });
    expect(when(state, { type: 'finish', now: 5, errorEmitId: 'x' })).toEqual({
      events: [event(EventTypes.workflowRunFinished, { runId: RUN, workflowId: 'p_1', accountId: 'u_1', status: 'succeeded', skipped: [] })],
    });
  });

  it('given step 1 exited the flow, then the run ends exited with its reason and steps 2 and 3 skipped', () => {
    const state = given(start, step(0, { flowExit: { reason: 'nothing to do' } }));
    expect(nextRunAction(state)).toEqual({ type: 'finish' });
    expect(when(state, { type: 'finish', now: 5, errorEmitId: 'x' })).toEqual({
      events: [event(EventTypes.workflowRunFinished, {
        runId: RUN, workflowId: 'p_1', accountId: 'u_1', status: 'exited', exitReason: 'nothing to do', skipped: ['two', 'three'],
      })],
    });
  });

  it('given step 2 failed, then the run fails and its error is emitted on $errors with the run and step', () => {
    const error = { name: 'TypeError', message: 'bad', stack: 'TypeError: bad\n at x' };
    const state = given(start, step(0), step(1, { status: 'failed', error }));
    expect(nextRunAction(state)).toEqual({ type: 'finish' });
    expect(when(state, { type: 'finish', now: 7, errorEmitId: 'err-1' })).toEqual({
      events: [
        event(EventTypes.workflowEventEmitted, {
          workflowId: 'p_1', accountId: 'u_1', runId: RUN, emitId: 'err-1',
          event: { error, workflow_id: 'p_1', run_id: RUN, step: 'two' },
          meta: { name: '$errors', summary: 'two failed: bad', ts: 7 }, deliveryIds: 'ordered',
        }),
        event(EventTypes.workflowRunFinished, { runId: RUN, workflowId: 'p_1', accountId: 'u_1', status: 'failed', skipped: ['three'] }),
      ],
    });
  });

  it('when a step already recorded is recorded again, then it is refused', () => {
    const outcome = step(0).data;
    expect(when(given(start, step(0)), { type: 'recordStep', outcome })).toEqual({
      rejected: { code: 'recorded', message: 'step 0 of run_1 is not the one to record' },
    });
  });

  it('when a run id is started twice, then the second start is refused (one run per emit)', () => {
    expect(when(given(start), { type: 'start', started })).toEqual({ rejected: { code: 'exists', message: 'run run_1 already exists' } });
    expect(when(given(), { type: 'start', started })).toEqual({ events: [start] });
  });

  it('given a finished run, then nothing more is recorded', () => {
    const finished = event(EventTypes.workflowRunFinished, { runId: RUN, workflowId: 'p_1', accountId: 'u_1', status: 'succeeded', skipped: [] });
    const state = given(start, step(0), step(1), step(2), finished);
    expect(nextRunAction(state)).toEqual({ type: 'none' });
    expect(when(state, { type: 'finish', now: 1, errorEmitId: 'x' })).toEqual({ rejected: { code: 'finished', message: 'run run_1 is over' } });
  });

  it('a step sees the trigger and each earlier step as its exports plus $return_value', () => {
    expect(stepsContext(given(start, step(0), step(1)), 2)).toEqual({
      trigger: started.trigger, one: { e0: 0, $return_value: 0 }, two: { e1: 1, $return_value: 10 },
    });
  });
});
