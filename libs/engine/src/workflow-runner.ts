import { EventEmitter } from 'node:events';
import { uuidTimeMs, uuidv5like, uuidv7, uuidv8at, uuidv8ordered, WrongExpectedRevisionError } from '@app/event-store';
import type { EventStore, StoredEvent } from '@app/event-store';
import {
  asSluiceEvent, decideRun, evolveRun, initialRunState, nextRunAction, resolveReferences, runtimeProps, RunCommand, RunState,
  RunStreamEvent, SecretBox, SluiceEvent, stepsContext, Streams, WorkflowEventEmitted, WorkflowRunStarted, WorkflowStepCompleted,
} from '@app/domain';
import type { NewSluiceEvent, QueuedSend } from '@app/domain';
import { sendStaysInServer } from '@app/sandbox';
import type { InvocationChain, SandboxInvocation, SandboxResult } from '@app/sandbox';
import type { CompiledComponent } from './engine-runtime';
import type { ExternalSendPerformer } from './workflow-sends';

/** The response a custom-response HTTP trigger's caller gets, or `undefined` when the run never responded. */
export type RunHttpResponse = NonNullable<WorkflowStepCompleted['httpResponse']>;

/**
 * Starts of runs waiting in their lanes kept in memory (`WorkflowRunStarted`, with its trigger
 * event and steps), per runner. A run past that is read back from the log when its turn comes
 * (one read of its stream), so a backlog behind a slow workflow holds a run id per run, not its
 * event: a workflow that cannot keep up with its triggers does not take the server's memory.
 */
export const MAX_STARTS_HELD = 256;

/**
 * Runs one workflow's lane may hold (waiting or running) before its triggers are refused
 * (`WorkflowRunner.hasRoom`): an HTTP trigger answers 429, a listener dispatch stays pending in
 * the read model until the lane has drained to half of it. A workflow slower than its triggers
 * then holds its backlog in the log, not in memory, and the dispatcher hands other listeners'
 * emits over meanwhile. Default of `WorkflowRunnerDeps.maxRunsWaiting` (SLUICE_WORKFLOW_MAX_WAITING_RUNS).
 */
export const DEFAULT_MAX_RUNS_WAITING = 1_000;

/** Namespace of the hash in a run's emit ids ({@link WorkflowRunner.emitIdOf}). */
const WORKFLOW_EMIT_NS = 'sluice.workflow-emit';
/** Namespace of the hash in the ids of runs started by emits ({@link WorkflowRunner.runIdForEmit}). */
const RUN_FOR_EMIT_NS = 'sluice.workflow-run-for-emit';

/** What the runner needs from the engine. */
export interface WorkflowRunnerDeps {
  store: EventStore<SluiceEvent>;
  box: SecretBox;
  component(id: string): CompiledComponent | undefined;
  /** Runs an invocation for the workflow's account (`EngineRuntime.invoke`). */
  invoke(inv: SandboxInvocation, accountId: string): Promise<SandboxResult>;
  sends: ExternalSendPerformer;
  /** A step's `$.service.db` store, once every append so far is in the read models. */
  stepDb(workflowId: string, stepName: string): Promise<Record<string, unknown>>;
  /** The sandbox's own limit on one invocation (SLUICE_SANDBOX_TIMEOUT_MS); a run's timeout only shortens it. */
  stepTimeoutMs: number;
  /** The workflow's concurrency setting now (1 when it is gone). */
  concurrency(workflowId: string): number;
  /**
   * How long a record acknowledged at its commit (a step's outcome, an emit) may wait for the
   * run's next records to share that commit (ms; the engine passes SLUICE_REQUEST_LINGER_MS).
   * Default 0: each record is written as soon as the writer is free.
   */
  recordLingerMs?: number;
  /**
   * Whether a step's invocation carries the steps after it that can run in the worker without the
   * server (see {@link WorkflowRunner.chainLinks}): one round trip to the worker for them all.
   * Default false (SLUICE_WORKFLOW_CHAIN, on by default, sets it in the engine).
   */
  chainSteps?: boolean;
  /** Whether a step of this component may be chained: false when its props need the server (connected accounts). Default: yes. */
  chainable?(component: CompiledComponent): boolean;
  /** Runs a workflow's lane may hold before {@link WorkflowRunner.hasRoom} says no. Default {@link DEFAULT_MAX_RUNS_WAITING}. */
  maxRunsWaiting?: number;
  /** Called when a lane that refused a trigger has drained to half of `maxRunsWaiting` (the dispatcher hands its emits over again). */
  onRoom?(workflowId: string): void;
}

/** A started run: when it is durable, what its HTTP caller gets, and when it is over. */
export interface StartedRun {
  runId: string;
  /** Resolves once `workflow.run_started` is durable (an HTTP trigger's 200 waits for it). */
  recorded: Promise<void>;
  /** The `$.respond` of a step, as soon as that step ends; `undefined` if the run ends without one. */
  response: Promise<RunHttpResponse | undefined>;
  /** Resolves when the run has ended (its end recorded). */
  done: Promise<void>;
}

/** A live `$.send.sse` payload. */
export interface WorkflowSseMessage { workflowId: string; channel: string; payload: unknown; runId: string; ts: number }

/**
 * A run being executed: when its records so far are durable, and the results of steps the worker
 * already ran in a chain (by step index), taken when the run reaches them.
 */
interface RunProgress { durable: Promise<void>; ahead?: Map<number, SandboxResult> }

interface Waiter { response: (r: RunHttpResponse | undefined) => void; done: () => void; failed: (err: unknown) => void }

/**
 * One lane per workflow: at most `concurrency` runs at once, started in trigger order. Once it has
 * refused a trigger (`refused`), it calls `drained` when it holds half of the runs it may again.
 */
class WorkflowLane {
  private readonly queue: string[] = [];
  private running = 0;
  /** Starts being recorded that will join the lane once they are (runs from emits). */
  private starting = 0;
  refused = false;
  constructor(
    private readonly limit: () => number,
    private readonly execute: (runId: string) => Promise<void>,
    private readonly lowWater: number,
    private readonly drained: () => void,
  ) {}

  /** Runs waiting, running or being started in this lane. */
  get size(): number {
    return this.queue.length + this.running + this.starting;
  }

  push(runId: string): void {
    this.queue.push(runId);
    this.pump();
  }

  /** A run whose start is being recorded: counted from now, so triggers checked meanwhile see it. */
  reserve(): void {
    this.starting++;
  }

  /** The reserved start was recorded (`runId`: it joins the lane) or refused (`undefined`). */
  started(runId: string | undefined): void {
    this.starting--;
    if (runId !== undefined) this.push(runId);
    else this.checkDrained();
  }

  private checkDrained(): void {
    if (this.refused && this.size <= this.lowWater) {
      this.refused = false;
      this.drained();
    }
  }

  private pump(): void {
    // The limit is read only when a run waits: reading it is a query of the workflow's row.
    while (this.queue.length > 0 && this.running < Math.max(1, this.limit())) {
      const runId = this.queue.shift()!;
      this.running++;
      void this.execute(runId).finally(() => {
        this.running--;
        this.checkDrained();
        this.pump();
      });
    }
  }
}

/**
 * What a run's record waits for before it is acknowledged (`AppendOptions.durability`). A step's
 * outcome, or the record of an emit or SSE message, only needs its commit: nothing leaves the
 * server on it, and losing it to a power loss runs the step again (as a crash between the step
 * and its record always did; a step's emits and deliveries carry ids derived from the run, so
 * they repeat with the same ids). A step with sends that leave the server (HTTP, email, S3) waits
 * for the fsync, since they are performed once it is durable, and so does the record of such a
 * send, whose loss would perform it again; the end of the run too: its caller, the next run's
 * `$.service.db` and the API's run-now wait for it, and its fsync covers every commit of the run
 * before it. Saves two to three fsyncs per run of a three-step workflow (issue 10). A run's start
 * waits for the fsync too (an HTTP trigger's caller waits for it), except the start of a run a
 * listener dispatch started, which settles that dispatch in its own commit (since stop 54).
 */
export function durabilityOf(command: RunCommand): 'log' | 'commit' {
  switch (command.type) {
    case 'recordStep':
      return command.outcome.sends.every((send) => sendStaysInServer(send.kind)) ? 'commit' : 'log';
    case 'recordSend':
      return sendStaysInServer(command.outcome.kind) ? 'commit' : 'log';
    // A run started by a listener dispatch: nobody waits for its start (see `WorkflowRunner.start`).
    case 'start':
      return command.started.dispatchId !== undefined ? 'commit' : 'log';
    default:
      return 'log';
  }
}

/**
 * Runs workflow runs from their streams. A run's next move is always `nextRunAction` of its
 * folded stream, so a run resumed after a crash goes on at the first step without a recorded
 * outcome (or the first unperformed send of the last recorded step): a recorded step never runs
 * twice. Each outcome is appended with the expected revision before the next move.
 */
export class WorkflowRunner {
  /** Live `$.send.sse` messages per workflow id. */
  readonly sse = new EventEmitter().setMaxListeners(0);
  private readonly lanes = new Map<string, WorkflowLane>();
  private readonly waiters = new Map<string, Waiter>();
  /**
   * Runs started by this process and not yet executing, with their start: nothing else is in their
   * streams. At most about {@link MAX_STARTS_HELD} once recorded; the others are read back.
   */
  private readonly startedHere = new Map<string, { started: WorkflowRunStarted; at: number; recorded?: Promise<void> }>();
  /** Per workflow, when the records of its last run that left the lane are durable. */
  private readonly lastDurable = new Map<string, Promise<void>>();
  /** When each run in progress was recorded as started (epoch ms), for `timeout_seconds`. */
  private readonly runStartedAt = new Map<string, number>();

  /** When this runner was made (epoch ms): see {@link runIdForEmitted}. */
  private readonly createdAt = Date.now();

  constructor(private readonly deps: WorkflowRunnerDeps) {}

  /**
   * The run id of a run started by an emit: one run per (workflow, emit), even when the dispatch
   * repeats. `run_` and 32 hex digits that start with the emit id's 48-bit time (for a
   * time-ordered emit id; {@link uuidv8ordered}), so the runs of emits recorded one after the
   * other sort together in the log's stream index, as fresh runs' ids do (`newRunId`).
   */
  static runIdForEmit(workflowId: string, emitId: string): string {
    return `run_${uuidv8ordered(emitId, RUN_FOR_EMIT_NS, `${workflowId}/${emitId}`).replace(/-/g, '')}`;
  }

  /** The run id builds before stop 53 gave a run started by an emit: uuidv5(workflow, emit), random. */
  static legacyRunIdForEmit(workflowId: string, emitId: string): string {
    return `run_${uuidv5like(workflowId, emitId).replace(/-/g, '')}`;
  }

  /**
   * The id to start the run of `workflowId` for `emitId` under: {@link runIdForEmit}, unless an
   * older build already started that run under {@link legacyRunIdForEmit} (it stopped after the
   * run's start and before the dispatch's record, so the dispatch comes again): then that id, which
   * the start refuses as a repeat. Only an emit that may be older than this runner can have such a
   * run, so the log is read only for those: an emit id without a time, or whose time is before this
   * runner was made (or implausibly far ahead of the clock). Emits recorded while this process runs
   * cost no read, and their id is returned as it is, not as a promise.
   */
  runIdForEmitted(workflowId: string, emitId: string): string | Promise<string> {
    const t = uuidTimeMs(emitId);
    if (t !== undefined && t >= this.createdAt && t <= Date.now() + 60_000) return WorkflowRunner.runIdForEmit(workflowId, emitId);
    const legacy = WorkflowRunner.legacyRunIdForEmit(workflowId, emitId);
    return this.deps.store.streamRevision(Streams.workflowRun(legacy))
      .then((revision) => (revision >= 0n ? legacy : WorkflowRunner.runIdForEmit(workflowId, emitId)));
  }

  /**
   * The id of an emit of a run (`emit:<step>:<send>`, `$errors`): the run's trigger time, then a
   * hash of run id and name ({@link uuidv8at}), so a re-run derives the same id and the emits of
   * runs started one after the other sort together, and so do their deliveries and dispatches
   * (recorded with `deliveryIds: 'ordered'`). It was uuidv5(run id, name) until stop 53: random.
   */
  static emitIdOf(started: WorkflowRunStarted, name: string): string {
    return uuidv8at(started.trigger.context.ts, WORKFLOW_EMIT_NS, `${started.runId}/${name}`);
  }

  /**
   * Records a run's start (`no_stream`: a run id is started once) and queues it on its
   * workflow's lane. When that run id was already started, `recorded` rejects with a
   * WrongExpectedRevisionError ({@link WorkflowRunner.isDuplicate}) and nothing runs.
   * `fresh`: the run id was made for this run (it cannot have been started before), so the run is
   * queued at once while its start lingers for the run's records (see `startsEarly`); if the
   * start then fails to be recorded, the run's records fail after it and nothing leaves the server.
   * A run id derived from an emit is queued once its start is recorded (a repeated dispatch's
   * start is refused there). Starting such runs early too, when the store could tell at once that
   * the stream was empty, was measured and left: see "A listening workflow's run settles its
   * dispatch" in docs/architecture.md.
   * The start of a run that settles a dispatch (`dispatchId`) is acknowledged at its commit
   * (`recorded`), and the run queued then: nothing outside waits for its fsync. The dispatch it
   * settles is in the same commit, and a power loss that takes the start takes the settlement too,
   * so the dispatch comes again and derives the same run id; the run's sends that leave the server
   * and its end wait for fsyncs that cover the start. Other starts (HTTP, timer, run-now) are
   * acknowledged at their fsync.
   */
  start(started: WorkflowRunStarted, opts: { fresh?: boolean } = {}): StartedRun {
    let waiter!: Waiter;
    const response = new Promise<RunHttpResponse | undefined>((res) => { waiter = { response: res, done: () => undefined, failed: () => undefined }; });
    const done = new Promise<void>((res, rej) => { waiter.done = res; waiter.failed = rej; });
    response.catch(() => undefined);
    done.catch(() => undefined);
    // A repeated start of a run id (a dispatch repeated after a crash) must not take the first one's waiter.
    const first = !this.waiters.has(started.runId);
    if (first) this.waiters.set(started.runId, waiter);
    const decision = decideRun(initialRunState(started.runId), { type: 'start', started });
    if ('rejected' in decision) throw new Error(decision.rejected.message);
    const events = this.stamp(decision.events, started.runId);
    const early = opts.fresh === true && this.startsEarly(started);
    const lingerMs = early ? this.deps.recordLingerMs ?? 0 : 0;
    const durability = durabilityOf({ type: 'start', started });
    const appended = this.deps.store.append(Streams.workflowRun(started.runId), events, { expectedRevision: 'no_stream', durability, ...(lingerMs > 0 ? { lingerMs } : {}) });
    let recorded: Promise<void>;
    if (early) {
      // A new run id cannot have been started before: the run goes on while its start lingers, so
      // the start, the steps and the end can share one commit and one fsync. Everything that must
      // not happen for a run that was never recorded waits for the start (`RunProgress.durable`).
      recorded = appended.then(() => {
        // Recorded and still waiting in a long lane: read back when its turn comes.
        if (this.startedHere.size > MAX_STARTS_HELD) this.startedHere.delete(started.runId);
      });
      this.startedHere.set(started.runId, { started, at: Date.now(), recorded });
      this.lane(started.workflowId).push(started.runId);
    } else {
      const lane = this.lane(started.workflowId);
      lane.reserve();
      recorded = appended.then(() => {
        // The run's only record so far is this start: its execution need not read it back,
        // unless the lanes already hold as many as they may.
        if (this.startedHere.size < MAX_STARTS_HELD) this.startedHere.set(started.runId, { started, at: Date.now() });
        lane.started(started.runId);
      }, (err: unknown) => {
        lane.started(undefined);
        throw err;
      });
    }
    recorded.catch((err) => {
      if (first) this.waiters.delete(started.runId);
      waiter.failed(err);
    });
    return { runId: started.runId, recorded, response, done };
  }

  /**
   * Whether a new run may start before its start is durable (`start`'s `fresh`): not when its
   * first step reads `$.service.db`, which waits for the start anyway (its linger would only delay it).
   */
  private startsEarly(started: WorkflowRunStarted): boolean {
    const first = started.steps[0];
    const comp = first ? this.deps.component(first.componentId) : undefined;
    return !comp?.definition.props.some((p) => p.type === '$.service.db');
  }

  /** How many runs' starts are held in memory now (see {@link MAX_STARTS_HELD}). */
  get startsHeld(): number {
    return this.startedHere.size;
  }

  /** Whether an append failed because the run id was already started. */
  static isDuplicate(err: unknown): boolean {
    return err instanceof WrongExpectedRevisionError;
  }

  /** Queues a run recorded before a restart that has no end yet (start-up, in trigger order). */
  resume(workflowId: string, runId: string): void {
    this.lane(workflowId).push(runId);
  }

  /**
   * Whether the workflow's lane may take another run from a trigger: it holds fewer than
   * `maxRunsWaiting` runs (waiting or running). When it does not, the lane remembers that it
   * refused one and calls `onRoom` once it has drained to half of that.
   */
  hasRoom(workflowId: string): boolean {
    if (!this.isFull(workflowId)) return true;
    this.lanes.get(workflowId)!.refused = true;
    return false;
  }

  /** Whether the workflow's lane holds `maxRunsWaiting` runs (without counting as a refusal, unlike {@link hasRoom}). */
  isFull(workflowId: string): boolean {
    return this.runsWaiting(workflowId) >= this.maxRunsWaiting;
  }

  /** Runs waiting or running in the workflow's lane. */
  runsWaiting(workflowId: string): number {
    return this.lanes.get(workflowId)?.size ?? 0;
  }

  /** Runs a workflow's lane may hold (`maxRunsWaiting`). */
  get maxRunsWaiting(): number {
    return this.deps.maxRunsWaiting ?? DEFAULT_MAX_RUNS_WAITING;
  }

  private lane(workflowId: string): WorkflowLane {
    let lane = this.lanes.get(workflowId);
    if (!lane) {
      lane = new WorkflowLane(
        () => this.deps.concurrency(workflowId), (runId) => this.execute(runId),
        Math.floor(this.maxRunsWaiting / 2), () => this.deps.onRoom?.(workflowId),
      );
      this.lanes.set(workflowId, lane);
    }
    return lane;
  }

  private stamp(events: NewSluiceEvent[], runId: string): NewSluiceEvent[] {
    // Object.assign, not a spread followed by new members: see `metadataWithTime` in append-rules.ts.
    return events.map((e) => Object.assign({}, e, { id: e.id ?? uuidv7(), metadata: { actor: runId, ...e.metadata } }));
  }

  /** The run's folded stream, and when its start is durable (a run started early: not yet, maybe). */
  private async load(runId: string): Promise<{ state: RunState; recorded?: Promise<void> }> {
    const state = initialRunState(runId);
    const here = this.startedHere.get(runId);
    if (here) {
      this.startedHere.delete(runId);
      evolveRun(state, { type: 'workflow.run_started.v1', data: here.started }, 0n);
      this.runStartedAt.set(runId, here.at);
      return { state, recorded: here.recorded };
    }
    for (const stored of await this.deps.store.readStream(Streams.workflowRun(runId))) {
      const e = asSluiceEvent(stored as StoredEvent) as (StoredEvent & RunStreamEvent) | undefined;
      if (!e) continue;
      evolveRun(state, e, stored.revision);
      if (e.type === 'workflow.run_started.v1') this.runStartedAt.set(runId, stored.metadata.at);
    }
    return { state };
  }

  /**
   * Decides, starts the append with the expected revision and folds at once: the next step can
   * start before this record is durable (appends of one stream apply in the order they were
   * started, so consecutive records of a run share group commits). What must not happen twice
   * waits for `durable` first: sends that leave the server, and the end of the run. Records that
   * nothing outside waits for are acknowledged at their commit (`durabilityOf`); the fsync of the
   * next record that is waited for covers them, as it covers every commit before it. They linger
   * for `recordLingerMs`, so a run's steps and its end share one commit: the end does not linger
   * and writes them all.
   */
  private record(state: RunState, command: RunCommand, run: RunProgress): void {
    const decision = decideRun(state, command);
    if ('rejected' in decision) throw new Error(decision.rejected.message);
    const events = this.stamp(decision.events, state.runId);
    const durability = durabilityOf(command);
    // Acknowledged at its commit, it can wait for the run's next records: a run's steps follow each other within a few milliseconds.
    const lingerMs = durability === 'commit' ? this.deps.recordLingerMs ?? 0 : 0;
    const append = this.deps.store.append(Streams.workflowRun(state.runId), events, { expectedRevision: state.revision, durability, ...(lingerMs > 0 ? { lingerMs } : {}) });
    let rev = state.revision;
    for (const e of events) evolveRun(state, e as RunStreamEvent, ++rev);
    const before = run.durable;
    run.durable = append.then(() => before);
    run.durable.catch(() => undefined);
  }

  private async execute(runId: string): Promise<void> {
    const waiter = this.waiters.get(runId);
    try {
      const { state, recorded } = await this.load(runId);
      // A run started before its start was durable: its sends that leave the server, its
      // `$.service.db` reads and its end wait for the start too.
      const run: RunProgress = { durable: recorded ?? Promise.resolve() };
      for (;;) {
        const next = nextRunAction(state);
        if (next.type === 'none') break;
        if (next.type === 'runStep') {
          const outcome = await this.runStep(state, next.index, run);
          this.record(state, { type: 'recordStep', outcome }, run);
          if (outcome.httpResponse) waiter?.response(outcome.httpResponse);
        } else if (next.type === 'performSend') {
          await this.performSend(state, next.stepIndex, next.sendIndex, next.send, run);
        } else {
          this.record(state, { type: 'finish', now: Date.now(), errorEmitId: WorkflowRunner.emitIdOf(state.started!, '$errors') }, run);
        }
      }
      // The lane moves on once the run's records are queued; the caller waits for them to be durable.
      const workflowId = state.started?.workflowId;
      if (workflowId) this.lastDurable.set(workflowId, run.durable);
      void run.durable.then(
        () => {
          waiter?.response(undefined);
          waiter?.done();
        },
        (err) => this.stopped(runId, waiter, err),
      );
    } catch (err) {
      this.stopped(runId, waiter, err);
    } finally {
      this.waiters.delete(runId);
      this.runStartedAt.delete(runId);
    }
  }

  private stopped(runId: string, waiter: Waiter | undefined, err: unknown): void {
    console.error(`workflow run ${runId} stopped`, err);
    waiter?.response(undefined);
    waiter?.failed(err);
  }

  private async runStep(state: RunState, index: number, run: RunProgress): Promise<WorkflowStepCompleted> {
    const s = state.started!;
    const step = s.steps[index];
    const base = { runId: s.runId, workflowId: s.workflowId, index, name: step.name };
    const comp = this.deps.component(step.componentId);
    const began = Date.now();
    const fail = (name: string, message: string): WorkflowStepCompleted => Object.assign({}, base, {
      status: 'failed' as const, exports: {}, logs: [], error: { name, message }, durationMs: Date.now() - began, sends: [],
    });
    if (!comp) return fail('Error', `component ${step.componentId} of step ${step.name} is missing`);
    const ahead = run.ahead?.get(index);
    if (ahead) {
      // Run in the worker right after the step before it (a chain): nothing of the run changed in between.
      run.ahead!.delete(index);
      return this.stepOutcome(base, ahead, began);
    }
    // The run's timeout counts from its recorded start, across restarts.
    const left = s.timeoutSeconds ? s.timeoutSeconds * 1000 - (began - (this.runStartedAt.get(s.runId) ?? began)) : undefined;
    if (left !== undefined && left <= 0) return fail('TimeoutError', `the run exceeded its timeout of ${s.timeoutSeconds} s`);
    const steps = stepsContext(state, index);
    const props = resolveReferences(runtimeProps(step.configuredProps, this.deps.box), steps);
    const dbProps = comp.definition.props.filter((p) => p.type === '$.service.db').map((p) => p.name);
    // A step's store is read from the read models, which only see durable records (this run's
    // and the previous run's of the workflow: the lane does not wait for those).
    if (dbProps.length) await Promise.all([run.durable, this.lastDurable.get(s.workflowId)?.catch(() => undefined)]);
    const db = dbProps.length ? await this.deps.stepDb(s.workflowId, step.name) : {};
    const dbBytes = Object.entries(db).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(v)), 0);
    const inv: SandboxInvocation = {
      codeId: comp.codeHash,
      // One isolate per workflow step: module state is never shared with another step or workflow.
      instanceId: `${s.workflowId}/${step.name}@${comp.codeHash}`,
      bundle: comp.bundle,
      entry: 'run',
      props,
      httpProps: {},
      dbProps,
      timerProps: {},
      // Only steps with a db wait for the read models (the store of the step's previous run).
      db,
      dbBytes,
      action: { steps },
      // Every step of a workflow on one worker: a chain finds its isolates there.
      placement: s.workflowId,
      ...(left !== undefined && left < this.deps.stepTimeoutMs ? { limits: { timeoutMs: Math.ceil(left) } } : {}),
    };
    const chain = this.chainLinks(state, index);
    if (chain) inv.chain = chain;
    const r = await this.deps.invoke(inv, s.accountId);
    if (r.chained?.length) {
      run.ahead ??= new Map();
      r.chained.forEach((result, i) => run.ahead!.set(index + 1 + i, result));
    }
    return this.stepOutcome(base, r, began);
  }

  /**
   * The steps after step `index` that the worker may run right after it (`InvocationChain`), or
   * undefined: each must have its component here, no `$.service.db` (its store is read from the
   * read models once the run's records are durable) and nothing the server must resolve
   * (`chainable`: connected accounts). Not for a run with a timeout, whose steps each get what is
   * left of it. The worker stops the chain where the server must act first (a failure, a respond,
   * a flow exit, a send that leaves the server: `chainGoesOn`); the records are appended by the
   * server afterwards in the order the run would have made them, so a run's stream is the same
   * with or without a chain, and a crash before they are recorded runs those steps again, as
   * it would have run the one step in progress.
   */
  private chainLinks(state: RunState, index: number): InvocationChain | undefined {
    const s = state.started!;
    if (!this.deps.chainSteps || s.timeoutSeconds) return undefined;
    const links: InvocationChain['links'] = [];
    for (let k = index + 1; k < s.steps.length; k++) {
      const step = s.steps[k];
      const comp = this.deps.component(step.componentId);
      if (!comp || this.deps.chainable?.(comp) === false || comp.definition.props.some((p) => p.type === '$.service.db')) break;
      links.push({
        name: step.name,
        inv: {
          codeId: comp.codeHash,
          instanceId: `${s.workflowId}/${step.name}@${comp.codeHash}`,
          placement: s.workflowId,
          bundle: comp.bundle,
          entry: 'run',
          // References stay as they are: the worker resolves them against the results before the step.
          props: runtimeProps(step.configuredProps, this.deps.box),
          httpProps: {},
          dbProps: [],
          timerProps: {},
          db: {},
          dbBytes: 0,
        },
      });
    }
    return links.length > 0 ? { name: s.steps[index].name, links } : undefined;
  }

  /** A step's outcome from what the sandbox answered. */
  private stepOutcome(base: { runId: string; workflowId: string; index: number; name: string }, r: SandboxResult, began: number): WorkflowStepCompleted {
    const logs = r.logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
    // Object.assign onto objects made here, not spreads followed by new members (each of those
    // gives every object made there a hidden class of its own: see `metadataWithTime` in append-rules.ts).
    const common = Object.assign({}, base, { exports: r.exports ?? {}, summary: r.summary, logs, durationMs: r.durationMs ?? Date.now() - began });
    if (!r.ok) {
      const e: { name: string; message: string; stack?: string } = r.error ?? { name: 'Error', message: 'the step failed' };
      return Object.assign(common, { status: 'failed' as const, error: { name: e.name, message: e.message, stack: e.stack }, sends: [] });
    }
    return Object.assign(common, {
      status: 'succeeded' as const,
      ret: r.returnValue,
      sends: (r.sends ?? []) as QueuedSend[],
      ...(r.flowExit ? { flowExit: r.flowExit } : {}),
      ...(r.httpResponse ? { httpResponse: r.httpResponse } : {}),
      ...(r.dbWrites.length ? { dbWrites: r.dbWrites } : {}),
    });
  }

  private async performSend(state: RunState, stepIndex: number, sendIndex: number, send: QueuedSend, run: RunProgress): Promise<void> {
    const s = state.started!;
    // Each outcome below is `base` and what it adds, by Object.assign (see the step's outcome above).
    const base = { runId: s.runId, workflowId: s.workflowId, stepIndex, sendIndex, kind: send.kind };
    if (send.kind === 'emit') {
      const p = send.params as { raw_event: unknown; name?: string };
      const emitId = WorkflowRunner.emitIdOf(s, `emit:${stepIndex}:${sendIndex}`);
      const emitted: WorkflowEventEmitted = {
        workflowId: s.workflowId, accountId: s.accountId, runId: s.runId, emitId, event: p.raw_event ?? null,
        meta: { ...(p.name ? { name: p.name } : {}), ts: Date.now() },
        ...(s.hops ? { hops: s.hops } : {}),
        deliveryIds: 'ordered',
      };
      this.record(state, { type: 'recordSend', outcome: Object.assign(base, { ok: true, detail: { emit_id: emitId, name: p.name ?? '' } }), emitted }, run);
      return;
    }
    if (send.kind === 'sse') {
      const p = send.params as { channel: string; payload: unknown };
      this.record(state, { type: 'recordSend', outcome: Object.assign(base, { ok: true, detail: { channel: p.channel } }) }, run);
      const msg: WorkflowSseMessage = { workflowId: s.workflowId, channel: p.channel, payload: p.payload, runId: s.runId, ts: Date.now() };
      this.sse.emit(s.workflowId, msg);
      return;
    }
    // Performed once the step's record is durable: a crash before that re-runs the step, not the send twice.
    await run.durable;
    const result = await this.deps.sends.perform(send, { workflowId: s.workflowId, runId: s.runId, stepIndex, sendIndex });
    this.record(state, { type: 'recordSend', outcome: { ...base, ...result } }, run);
  }
}
