import {
  decideSource, event, EventTypes, evolveSource, ExecutionResult, initialSourceState, plannedHooks, SourceCommand, SourceConfig,
  SourceDecision, SourceState, SourceStreamEvent,
} from '@app/domain';

/** The source's decisions, given / when / then: past events in, a command, events or a refusal out. No I/O. */
const SOURCE = 'dc_1';
const ACCOUNT = 'u_1';
const config: SourceConfig = { componentId: 'sc_1', name: 'Hello', nameSlug: 'hello', configuredProps: { n: 1 }, active: true };
const inactive: SourceConfig = { ...config, active: false };

function given(...history: SourceStreamEvent[]): SourceState {
  const state = initialSourceState(SOURCE);
  history.forEach((e, i) => evolveSource(state, e, BigInt(i)));
  return state;
}

function when(state: SourceState, command: SourceCommand): SourceDecision {
  return decideSource(state, command);
}

const deployRequested = (c: SourceConfig = config) => event(EventTypes.sourceDeployRequested, { sourceId: SOURCE, accountId: ACCOUNT, ...c });
const deployed = event(EventTypes.sourceDeployed, { sourceId: SOURCE });
const deletedHistory = [deployRequested(), deployed, event(EventTypes.sourceDeleteRequested, { sourceId: SOURCE, ignoreHookErrors: false }),
  event(EventTypes.sourceDeleted, { sourceId: SOURCE, accountId: ACCOUNT })];

function result(over: Partial<ExecutionResult> = {}): ExecutionResult {
  return { ok: true, logs: [], emits: [], dbWrites: [], durationMs: 3, ...over };
}

const boom = { name: 'Error', message: 'boom' };

/** A hook's record command, with fixed ids and clock. */
function hookRan(hook: 'deploy' | 'activate' | 'deactivate', hookResult: ExecutionResult, dedupe?: 'unique' | 'greatest' | 'last'): SourceCommand {
  let n = 0;
  return { type: 'recordHook', hook, result: hookResult, dedupe, runId: 'hook1', now: 500, newEmitId: () => `h${++n}` };
}

describe('decideSource: deploy, update, delete, clear', () => {
  it('given nothing, when deploy, then the deploy is requested with the config', () => {
    expect(when(given(), { type: 'deploy', accountId: ACCOUNT, config })).toEqual({ events: [deployRequested()] });
  });

  it('given a deployed source, when deploy again, then nothing is recorded', () => {
    expect(when(given(deployRequested(), deployed), { type: 'deploy', accountId: ACCOUNT, config })).toEqual({ events: [] });
  });

  it('given a deployed source, when update, then the update is requested with the new config', () => {
    expect(when(given(deployRequested(), deployed), { type: 'update', config: inactive }))
      .toEqual({ events: [event(EventTypes.sourceUpdateRequested, { sourceId: SOURCE, ...inactive })] });
  });

  it('given a source still deploying, when update or delete, then it is refused as not deployed', () => {
    const refused = { rejected: { code: 'not_deployed', message: 'source dc_1 is deploying' } };
    expect(when(given(deployRequested()), { type: 'update', config })).toEqual(refused);
    expect(when(given(deployRequested()), { type: 'delete', ignoreHookErrors: true })).toEqual(refused);
  });

  it('given a deleted source, when delete, then it is refused', () => {
    expect(when(given(...deletedHistory), { type: 'delete', ignoreHookErrors: false }))
      .toEqual({ rejected: { code: 'not_deployed', message: 'source dc_1 is deleted' } });
  });

  it('given a deployed source, when delete, then the delete is requested with its hook policy', () => {
    expect(when(given(deployRequested(), deployed), { type: 'delete', ignoreHookErrors: true }))
      .toEqual({ events: [event(EventTypes.sourceDeleteRequested, { sourceId: SOURCE, ignoreHookErrors: true })] });
  });

  it('when clearEvents, then the cleared range is recorded', () => {
    expect(when(given(deployRequested(), deployed), { type: 'clearEvents', startId: '1-0', endId: '2-5' }))
      .toEqual({ events: [event(EventTypes.sourceEventsCleared, { sourceId: SOURCE, startId: '1-0', endId: '2-5' })] });
  });

  it('given a state that names no source, every command is refused', () => {
    expect(decideSource(initialSourceState(), { type: 'clearEvents' })).toMatchObject({ rejected: { code: 'unknown_source' } });
  });
});

describe('decideSource: lifecycle hooks and the end of a transition', () => {
  it('plans deploy then activate for an active source, deploy alone for an inactive one', () => {
    expect(plannedHooks(given(deployRequested())).map((h) => h.hook)).toEqual(['deploy', 'activate']);
    expect(plannedHooks(given(deployRequested(inactive))).map((h) => h.hook)).toEqual(['deploy']);
  });

  it('plans deactivate with the old config, then activate with the new one, for an update', () => {
    const next = { ...config, name: 'Next' };
    const state = given(deployRequested(), deployed, event(EventTypes.sourceUpdateRequested, { sourceId: SOURCE, ...next }));
    expect(plannedHooks(state)).toEqual([{ config, hook: 'deactivate' }, { config: next, hook: 'activate' }]);
    expect(plannedHooks(given(deployRequested(), deployed))).toEqual([]);
  });

  it('given a deploy in progress, when a hook succeeds, then its last db write per key and its run are recorded', () => {
    const hookResult = result({
      dbWrites: [{ key: 'a', value: 1 }, { key: 'b', value: 2 }, { key: 'a', value: 3 }],
      logs: [{ level: 'log', message: 'hi', ts: 5 }],
    });
    expect(when(given(deployRequested()), hookRan('deploy', hookResult))).toEqual({
      events: [
        event(EventTypes.sourceDbSet, { sourceId: SOURCE, key: 'a', value: 3 }),
        event(EventTypes.sourceDbSet, { sourceId: SOURCE, key: 'b', value: 2 }),
        event(EventTypes.sourceHookRan, {
          sourceId: SOURCE, hook: 'deploy', ok: true, error: undefined, logs: [{ level: 'log', message: 'hi', ts: 5 }], durationMs: 3,
        }),
      ],
    });
  });

  it('given a deploy in progress, when the deploy hook emits history, then the emits are recorded like a run\'s: deduped, in ts order, named by the hook', () => {
    const emits = [
      { event: { item: 2 }, meta: { id: 'b', ts: 20 } },
      { event: { item: 1 }, meta: { id: 'a', ts: 10 } },
      { event: { again: 1 }, meta: { id: 'a', ts: 30 } },
    ];
    const decision = when(given(deployRequested()), hookRan('deploy', result({ emits }), 'unique'));
    const emitted = (emitId: string, summaryId: string, payload: unknown, meta: object) =>
      event(EventTypes.sourceEventEmitted, { sourceId: SOURCE, accountId: ACCOUNT, emitId, runId: 'hook1', summaryId, event: payload, meta, deliveryIds: 'ordered' }, undefined, emitId);
    expect(decision).toEqual({
      events: [
        emitted('h1', '500-0', { item: 1 }, { id: 'a', ts: 10 }),
        emitted('h2', '500-1', { item: 2 }, { id: 'b', ts: 20 }),
        event(EventTypes.sourceHookRan, {
          sourceId: SOURCE, hook: 'deploy', ok: true, error: undefined, logs: [], durationMs: 3, runId: 'hook1', emitted: 2,
        }),
      ],
    });
  });

  it('given history emitted by the deploy hook, when a later run emits the same ids under "unique", then they are dropped', () => {
    const history = when(given(deployRequested()), hookRan('deploy', result({ emits: [{ event: 1, meta: { id: 'a' } }] }), 'unique'));
    if (!('events' in history)) throw new Error('refused');
    const state = given(deployRequested(), ...(history.events as SourceStreamEvent[]), deployed);
    const decision = when(state, {
      type: 'recordRun', trigger: 'timer', result: result({ emits: [{ event: 1, meta: { id: 'a' } }, { event: 2, meta: { id: 'b' } }] }),
      dedupe: 'unique', runId: 'run1', now: 1000, newEmitId: () => 'e1',
    });
    expect(decision).toMatchObject({ events: [{ type: EventTypes.sourceEventEmitted, data: { meta: { id: 'b' }, summaryId: '1000-1' } }, { type: EventTypes.sourceRunCompleted }] });
  });

  it('given a deploy in progress, when a hook fails, then its db writes and emits are dropped and its failure recorded', () => {
    const failed = result({ ok: false, error: { ...boom, kind: 'user' }, dbWrites: [{ key: 'a', value: 1 }], emits: [{ event: 1, meta: {} }] });
    expect(when(given(deployRequested()), hookRan('activate', failed))).toEqual({
      events: [event(EventTypes.sourceHookRan, { sourceId: SOURCE, hook: 'activate', ok: false, error: boom, logs: [], durationMs: 3 })],
    });
  });

  it('given a deployed source, when a hook result comes, then it is refused: no transition is in progress', () => {
    expect(when(given(deployRequested(), deployed), hookRan('deploy', result())))
      .toMatchObject({ rejected: { code: 'not_in_transition' } });
    expect(when(given(deployRequested(), deployed), { type: 'finishTransition' })).toMatchObject({ rejected: { code: 'not_in_transition' } });
  });

  it('given a deploy in progress, when it finishes, then the source is deployed, or failed with the hook that failed', () => {
    expect(when(given(deployRequested()), { type: 'finishTransition' })).toEqual({ events: [deployed] });
    expect(when(given(deployRequested()), { type: 'finishTransition', failure: { hook: 'activate', error: boom } }))
      .toEqual({ events: [event(EventTypes.sourceDeployFailed, { sourceId: SOURCE, hook: 'activate', error: boom })] });
  });

  it('given an update in progress, when it finishes, then the pending config becomes the config, or the update failed', () => {
    const updating = given(deployRequested(), deployed, event(EventTypes.sourceUpdateRequested, { sourceId: SOURCE, ...inactive }));
    expect(when(updating, { type: 'finishTransition' })).toEqual({ events: [event(EventTypes.sourceUpdated, { sourceId: SOURCE, ...inactive })] });
    expect(when(updating, { type: 'finishTransition', failure: { hook: 'deactivate', error: boom } }))
      .toEqual({ events: [event(EventTypes.sourceUpdateFailed, { sourceId: SOURCE, hook: 'deactivate', error: boom })] });
  });

  it('given a delete in progress, when its hook failed, then it fails, unless hook errors are ignored', () => {
    const deleting = (ignoreHookErrors: boolean) =>
      given(deployRequested(), deployed, event(EventTypes.sourceDeleteRequested, { sourceId: SOURCE, ignoreHookErrors }));
    const failure = { hook: 'deactivate' as const, error: boom };
    expect(when(deleting(false), { type: 'finishTransition', failure }))
      .toEqual({ events: [event(EventTypes.sourceDeleteFailed, { sourceId: SOURCE, hook: 'deactivate', error: boom })] });
    const deleted = { events: [event(EventTypes.sourceDeleted, { sourceId: SOURCE, accountId: ACCOUNT })] };
    expect(when(deleting(true), { type: 'finishTransition', failure })).toEqual(deleted);
    expect(when(deleting(false), { type: 'finishTransition' })).toEqual(deleted);
  });
});

describe('decideSource: recording a run', () => {
  const ids = () => {
    let n = 0;
    return () => `e${++n}`;
  };
  const run = (over: Partial<Extract<SourceCommand, { type: 'recordRun' }>> = {}): SourceCommand => ({
    type: 'recordRun', trigger: 'http', requestId: 'r1', result: result(), dedupe: undefined, runId: 'run1', now: 1000, newEmitId: ids(), ...over,
  });

  it('given a deployed source, when a run ends, then its writes, its emits in ts order and its completion are recorded in that order', () => {
    const emits = [{ event: { n: 2 }, meta: { ts: 20 } }, { event: { n: 1 }, meta: { ts: 10, name: 'ch' } }];
    const decision = when(given(deployRequested(), deployed), run({ result: result({ emits, dbWrites: [{ key: 'k', value: 1 }] }) }));
    const emitted = (emitId: string, summaryId: string, payload: unknown, meta: object) =>
      event(EventTypes.sourceEventEmitted, { sourceId: SOURCE, accountId: ACCOUNT, emitId, runId: 'run1', summaryId, event: payload, meta, deliveryIds: 'ordered' }, undefined, emitId);
    expect(decision).toEqual({
      events: [
        event(EventTypes.sourceDbSet, { sourceId: SOURCE, key: 'k', value: 1 }),
        emitted('e1', '1000-0', { n: 1 }, { ts: 10, name: 'ch' }),
        emitted('e2', '1000-1', { n: 2 }, { ts: 20 }),
        event(EventTypes.sourceRunCompleted, {
          sourceId: SOURCE, runId: 'run1', trigger: 'http', requestId: 'r1', ok: true, error: undefined, logs: [], emitted: 2, durationMs: 3,
        }, undefined, 'run1'),
      ],
    });
  });

  it('given an emit id already seen under "unique", when a run emits it again, then it is dropped, and an emit without an id is refused with a log line', () => {
    const seen = event(EventTypes.sourceEventEmitted, {
      sourceId: SOURCE, accountId: ACCOUNT, emitId: 'old', runId: 'run0', summaryId: '900-0', event: {}, meta: { id: 'a' },
    });
    const decision = when(given(deployRequested(), deployed, seen), run({
      dedupe: 'unique', result: result({ emits: [{ event: 1, meta: { id: 'a' } }, { event: 2, meta: { id: 'b' } }, { event: 3, meta: {} }] }),
    }));
    if (!('events' in decision)) throw new Error('refused');
    const types = decision.events.map((e) => e.type);
    expect(types).toEqual([EventTypes.sourceEventEmitted, EventTypes.sourceRunCompleted]);
    const [emit, completed] = decision.events;
    expect(emit).toMatchObject({ data: { meta: { id: 'b' }, summaryId: '1000-1' } });
    expect(completed).toMatchObject({ data: { emitted: 1, logs: [{ level: 'error', ts: 1000 }] } });
  });

  it('every event a run or hook records reads as its own JSON: no member is set to undefined (the inline fold then reads it without parsing)', () => {
    const recorded = [
      when(given(deployRequested(), deployed), run()),
      when(given(deployRequested(), deployed), run({ trigger: 'timer', requestId: undefined, result: result({ emits: [{ event: { n: 1 }, meta: {} }] }) })),
      when(given(deployRequested(), deployed), run({ trigger: 'timer', requestId: undefined, result: result({ ok: false, error: boom }) })),
      when(given(deployRequested()), hookRan('deploy', result())),
      when(given(deployRequested()), hookRan('deploy', result({ ok: false, error: boom }))),
    ];
    let events = 0;
    for (const decision of recorded) {
      if (!('events' in decision)) throw new Error(`refused: ${decision.rejected.message}`);
      for (const e of decision.events) {
        events++;
        // toStrictEqual tells `{ error: undefined }` from `{}`, which JSON does not.
        expect(e.data).toStrictEqual(JSON.parse(JSON.stringify(e.data)));
      }
    }
    expect(events).toBe(7);
  });

  it('when a run fails, then it is recorded failed and its error is emitted on $errors', () => {
    const decision = when(given(deployRequested(), deployed), run({
      trigger: 'timer', requestId: undefined, result: result({ ok: false, error: { ...boom, kind: 'user' } }),
    }));
    expect(decision).toMatchObject({
      events: [
        { type: EventTypes.sourceEventEmitted, data: { event: { error: { ...boom, kind: 'user' }, trigger: 'timer' }, meta: { name: '$errors', summary: 'Error: boom' } } },
        { type: EventTypes.sourceRunCompleted, data: { ok: false, error: { ...boom, kind: 'user' }, emitted: 1 } },
      ],
    });
  });

  it('when a listener run (trigger event, n hops) ends, then its emits and its completion carry the hops, so a cycle can be cut off', () => {
    const decision = when(given(deployRequested(), deployed), run({
      trigger: 'event', requestId: 'dispatch1', hops: 3, result: result({ emits: [{ event: { n: 1 }, meta: {} }] }),
    }));
    expect(decision).toMatchObject({
      events: [
        { type: EventTypes.sourceEventEmitted, data: { event: { n: 1 }, hops: 3 } },
        { type: EventTypes.sourceRunCompleted, data: { trigger: 'event', requestId: 'dispatch1', hops: 3 } },
      ],
    });
  });

  it('given a request that already ran, when its run ends again, then it is refused', () => {
    const ran = event(EventTypes.sourceRunCompleted, {
      sourceId: SOURCE, runId: 'run0', trigger: 'http', requestId: 'r1', ok: true, logs: [], emitted: 0, durationMs: 1,
    });
    expect(when(given(deployRequested(), deployed, ran), run())).toMatchObject({ rejected: { code: 'already_handled' } });
  });

  it('given a source that is not deployed, when a run ends, then it is refused', () => {
    expect(when(given(...deletedHistory), run())).toEqual({ rejected: { code: 'not_deployed', message: 'source dc_1 is deleted' } });
    expect(when(given(deployRequested()), run())).toMatchObject({ rejected: { code: 'not_deployed' } });
  });
});
