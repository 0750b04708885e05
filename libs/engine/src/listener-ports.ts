/** Where an emitted event came from, handed to the listener it is dispatched to. */
export interface EmittedEventContext {
  /** `dc_...` (a source) or `p_...` (a workflow). */
  emitterId: string;
  emitId: string;
  /** The channel (`name`), `''` for the default one. */
  eventName: string;
  /** epoch ms of the emit. */
  ts: number;
  /**
   * Listener hops of the run this dispatch starts (the emit's hops + 1). The run must carry it
   * into its `workflow.event_emitted.v1` (`hops`), so a cycle through workflows is cut off at
   * `MAX_LISTENER_HOPS` like one through sources.
   */
  hops?: number;
  /**
   * The dispatch handing the emit over (`ListenerDispatch.dispatchId`): the run's start names it
   * (`WorkflowRunStarted.dispatchId`), which settles the dispatch in the same commit.
   */
  dispatchId?: string;
}

/**
 * What {@link WorkflowListenerPort.startFromEmit} did:
 * - `settled`: it recorded the run's start, which names the dispatch and so settles it;
 * - `started`: the run exists but its start does not settle the dispatch (it was started before,
 *   by a dispatch repeated after a crash or by an older build, or no dispatch id was given): the
 *   dispatcher records `listener.dispatched.v1`;
 * - `skipped`: the workflow does not listen (inactive, deleted, another account's): likewise;
 * - `full`: the workflow holds as many runs as it may (`WorkflowRunner.hasRoom`): nothing was
 *   started, the dispatch stays pending, and the dispatcher hands the workflow nothing more until
 *   the engine calls `ListenerDispatcher.listenerHasRoom` for it.
 */
export type StartFromEmitOutcome = 'settled' | 'started' | 'skipped' | 'full';

/**
 * How the emit dispatcher starts a workflow subscribed as a listener (`listener_id` `p_...`).
 * Must be idempotent per (workflowId, context.emitId): a dispatch repeated after a crash must not
 * start a second run (derive the run id from both, e.g. uuidv5, and append with `no_stream`).
 */
export interface WorkflowListenerPort {
  /** Resolves once the start is committed (its fsync may follow: see `WorkflowRunner.start`). */
  startFromEmit(workflowId: string, accountId: string, event: unknown, context: EmittedEventContext): Promise<StartFromEmitOutcome>;
}
