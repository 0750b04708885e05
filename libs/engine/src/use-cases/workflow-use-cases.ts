import {
  decideWorkflow, evolveWorkflow, initialWorkflowState, newId, newRunId, randomToken, slugify, uniqueSlug, validateConfiguredProps,
  WorkflowCommand, WorkflowConfig, WorkflowRunStarted, WorkflowStepConfig, WorkflowStreamEvent, WorkflowTrigger, Streams,
  asSluiceEvent, baseType, isExactReference, PropDefinition, RunTriggerRecord,
} from '@app/domain';
import { uuidv7 } from '@app/event-store';
import type { WorkflowRow } from '@app/projections';
import { ConflictError, FieldError, InvalidFieldsError, NotFoundError, RateLimitedError } from '../engine-errors';
import type { WorkflowConfigs } from '../workflow-configs';
import { checkConfiguredProps } from '../configured-props-check';
import { type EngineRuntime, MAX_REMEMBERED_KEYS } from '../engine-runtime';
import { effectiveProps } from '../prop-configuration';
import type { HttpRequestEvent } from '../http-request-event';
import type { EmittedEventContext, StartFromEmitOutcome, WorkflowListenerPort } from '../listener-ports';
import { parseSettings, parseSteps, parseTrigger, propsWithoutReferences, WorkflowStepInput } from '../workflow-definition';
import { StartedRun, WorkflowRunner } from '../workflow-runner';
import { InCallOrder } from '../in-call-order';
import type { ComponentUseCases } from './component-use-cases';
import { cascadeDeleteSubscriptions } from './subscription-cascade';
import type { SubscriptionUseCases } from './subscription-use-cases';

/** A workflow as the API takes it (raw trigger, steps and settings are checked here, naming fields). */
export interface WorkflowInput {
  name?: string;
  trigger?: unknown;
  steps?: unknown;
  settings?: unknown;
  active?: boolean;
}

/** A workflow at an endpoint key. */
export interface WorkflowEndpointTarget { workflowId: string; accountId: string; customResponse: boolean }

/**
 * Workflows (`p_`): saving (create and update record the whole definition with its version),
 * deleting (with the subscriptions that name it), and starting runs from every trigger. The runs
 * themselves belong to the {@link WorkflowRunner}.
 */
export class WorkflowUseCases implements WorkflowListenerPort {
  private readonly startsFromEmits = new InCallOrder();

  constructor(
    private readonly rt: EngineRuntime,
    private readonly runner: WorkflowRunner,
    private readonly components: ComponentUseCases,
    private readonly subscriptions: SubscriptionUseCases,
    private readonly refreshTimer: (workflowId: string) => void,
    private readonly configs: WorkflowConfigs,
  ) {}

  async create(accountId: string, input: WorkflowInput): Promise<string> {
    this.rt.assertWritable();
    const workflowId = newId('p');
    const config = await this.definition(accountId, input, undefined);
    await this.command(workflowId, { type: 'create', accountId, config });
    await this.followTrigger(accountId, workflowId, undefined, config.trigger);
    return workflowId;
  }

  /** Replaces the definition (same id; the endpoint URL stays); runs started afterwards use it. */
  async update(accountId: string, idOrSlug: string, input: WorkflowInput): Promise<string> {
    this.rt.assertWritable();
    const row = this.own(accountId, idOrSlug);
    const previous = this.configs.of(row);
    const config = await this.definition(accountId, input, { row, previous });
    await this.command(row.id, { type: 'update', config });
    await this.followTrigger(accountId, row.id, previous.trigger, config.trigger);
    return row.id;
  }

  /** Deletes a workflow; its endpoint and timer stop with it, the subscriptions naming it are deleted. */
  async delete(accountId: string, idOrSlug: string): Promise<string> {
    this.rt.assertWritable();
    const row = this.own(accountId, idOrSlug);
    await this.command(row.id, { type: 'delete' });
    const q = this.rt.queries;
    const subs = [...q.subscriptionsByEmitter(row.id), ...q.subscriptionsByListener(row.id)].map((s) => s.id);
    await cascadeDeleteSubscriptions(this.rt, accountId, [...new Set(subs)], `workflow ${row.id} deleted`);
    await this.rt.settle();
    this.refreshTimer(row.id);
    this.configs.drop(row.id);
    return row.id;
  }

  /** Runs a workflow now with `event` as `steps.trigger.event`; resolves when the run is over, with its id. */
  async runNow(accountId: string, idOrSlug: string, event: unknown): Promise<string> {
    this.rt.assertWritable();
    const row = this.own(accountId, idOrSlug);
    // A full workflow takes no run from any trigger, this one included (its caller would wait behind them all).
    if (!this.runner.hasRoom(row.id)) throw new RateLimitedError(`workflow ${row.id} has too many runs waiting; retry shortly`);
    const run = this.startRun(row, { event: event ?? {}, context: { emitter_id: row.id, emit_id: uuidv7(), ts: Date.now(), trigger: 'manual' } });
    await run.recorded;
    await run.done.catch(() => undefined);
    await this.rt.settle();
    return run.runId;
  }

  /**
   * The active workflow with an HTTP trigger at an endpoint key. Remembered until a workflow's
   * definition changes (`EngineRuntime.workflowEndpointTargets`), keys that lead nowhere too.
   */
  findEndpoint(endpointKey: string): WorkflowEndpointTarget | undefined {
    const known = this.rt.workflowEndpointTargets.get(endpointKey);
    if (known !== undefined) return known ?? undefined;
    const row = this.rt.queries.workflows.workflowByEndpoint(endpointKey);
    let target: WorkflowEndpointTarget | undefined;
    if (row && row.active === 1) {
      const trigger = this.configs.of(row).trigger;
      if (trigger.type === 'http') target = { workflowId: row.id, accountId: row.account_id, customResponse: trigger.customResponse };
    }
    // Bounded: a flood of unknown keys empties the map rather than growing it.
    if (this.rt.workflowEndpointTargets.size >= MAX_REMEMBERED_KEYS) this.rt.workflowEndpointTargets.clear();
    this.rt.workflowEndpointTargets.set(endpointKey, target ?? null);
    return target;
  }

  /**
   * Whether the workflow may take another run from a trigger now (its lane holds fewer than
   * SLUICE_WORKFLOW_MAX_WAITING_RUNS runs): an HTTP trigger answers 429 when not.
   */
  hasRoom(workflowId: string): boolean {
    return this.runner.hasRoom(workflowId);
  }

  /**
   * What the workflow has not run yet: its runs waiting or running in this process, the emits it
   * listens to that wait in the log (pending dispatches), and whether it is full (its triggers
   * refused until it has drained to half).
   */
  backlog(accountId: string, idOrSlug: string): { runsWaiting: number; emitsWaiting: number; full: boolean; maxRunsWaiting: number } {
    const row = this.own(accountId, idOrSlug);
    return {
      runsWaiting: this.runner.runsWaiting(row.id),
      emitsWaiting: this.rt.queries.pendingListenerDispatchCount(row.id),
      full: this.runner.isFull(row.id),
      maxRunsWaiting: this.runner.maxRunsWaiting,
    };
  }

  /** Starts a run for an HTTP request (`recorded` resolves once it is durable). */
  receive(workflowId: string, request: HttpRequestEvent): StartedRun {
    const row = this.rt.workflowDefinition(workflowId)!;
    return this.startRun(row, { event: request, context: { emitter_id: workflowId, emit_id: uuidv7(), ts: Date.now(), trigger: 'http' } });
  }

  /** A timer tick: one run with the timer event. */
  async fireTimer(workflowId: string, event: unknown): Promise<void> {
    const row = this.rt.queries.workflows.workflow(workflowId);
    if (!row || row.active !== 1) return;
    const run = this.startRun(row, { event, context: { emitter_id: workflowId, emit_id: uuidv7(), ts: Date.now(), trigger: 'timer' } });
    await run.recorded;
    await run.done.catch(() => undefined);
  }

  /**
   * The emit dispatcher's port: one run per (workflow, emit), however often it is dispatched.
   * Resolves once the start is committed: `settled` when this call recorded it (it names the
   * dispatch, which its commit settles), `started` when the run was started before.
   */
  async startFromEmit(workflowId: string, accountId: string, event: unknown, context: EmittedEventContext): Promise<StartFromEmitOutcome> {
    const row = this.rt.queries.workflows.workflow(workflowId);
    if (!row || row.account_id !== accountId || row.active !== 1) return 'skipped';
    const trigger: RunTriggerRecord = { event, context: { emitter_id: context.emitterId, emit_id: context.emitId, ts: context.ts, trigger: 'emitter' } };
    // Started in dispatch order (a lane keeps its runs in the order their starts were recorded),
    // also when the id of one of them needs a read of the log first. The lane's room is looked at
    // in the turn of the start that takes it (counted from there): a full workflow's emits stay in
    // the read model, not in its lane.
    const run = await this.startsFromEmits.apply(
      this.runner.runIdForEmitted(workflowId, context.emitId),
      (runId) => (this.runner.hasRoom(workflowId) ? this.startRun(row, trigger, runId, context.hops, context.dispatchId) : undefined));
    if (!run) return 'full';
    try {
      await run.recorded;
    } catch (err) {
      if (!WorkflowRunner.isDuplicate(err)) throw err;
      return 'started';
    }
    return context.dispatchId !== undefined ? 'settled' : 'started';
  }

  /** Resumes runs recorded before a restart that have no end, in trigger order. */
  resumeUnfinished(): void {
    for (const r of this.rt.queries.workflows.unfinishedRuns()) this.runner.resume(r.workflow_id, r.id);
  }

  private startRun(row: WorkflowRow, trigger: RunTriggerRecord, given?: string, hops?: number, dispatchId?: string): StartedRun {
    const runId = given ?? newRunId();
    const config = this.configs.of(row);
    const started: WorkflowRunStarted = {
      runId, workflowId: row.id, accountId: row.account_id, workflowVersion: row.version, steps: config.steps, trigger,
      customResponse: config.trigger.type === 'http' && config.trigger.customResponse,
      ...(config.settings.timeoutSeconds ? { timeoutSeconds: config.settings.timeoutSeconds } : {}),
      ...(hops ? { hops } : {}),
      ...(dispatchId !== undefined ? { dispatchId } : {}),
    };
    // A run id made here is new: the run may start before its start is durable.
    return this.runner.start(started, { fresh: given === undefined });
  }

  private own(accountId: string, idOrSlug: string): WorkflowRow {
    return this.rt.queries.ownWorkflow(accountId, idOrSlug);
  }

  /** Folds the workflow's stream, decides and appends with the expected revision, then waits for the read models. */
  private async command(workflowId: string, command: WorkflowCommand): Promise<void> {
    const stream = Streams.workflow(workflowId);
    const state = initialWorkflowState(workflowId);
    for (const stored of await this.rt.store.readStream(stream)) {
      const e = asSluiceEvent(stored) as WorkflowStreamEvent | undefined;
      if (e) evolveWorkflow(state, e, stored.revision);
    }
    const decision = decideWorkflow(state, command);
    if ('rejected' in decision) {
      if (decision.rejected.code === 'not_found') throw new NotFoundError(`workflow ${workflowId}`);
      throw new ConflictError(decision.rejected.message);
    }
    const actor = state.accountId ?? (command.type === 'create' ? command.accountId : 'system');
    await this.rt.appendAndProject(stream, decision.events.map((e) => ({ ...e, metadata: { actor } })), state.revision < 0n ? 'no_stream' : state.revision);
  }

  /** Keeps the trigger's subscription and timer in line with the saved definition. */
  private async followTrigger(accountId: string, workflowId: string, before: WorkflowTrigger | undefined, after: WorkflowTrigger): Promise<void> {
    const same = before?.type === 'emitter' && after.type === 'emitter' && before.emitterId === after.emitterId && before.eventName === after.eventName;
    if (before?.type === 'emitter' && !same) {
      const old = this.rt.queries.subscriptionByTriple(accountId, before.emitterId, workflowId, before.eventName);
      if (old) await this.subscriptions.delete(accountId, old.id, `workflow ${workflowId} trigger changed`);
    }
    if (after.type === 'emitter' && !same) {
      await this.subscriptions.create(accountId, { emitterId: after.emitterId, listenerId: workflowId, eventName: after.eventName });
    }
    this.refreshTimer(workflowId);
  }

  /** Checks a definition and resolves each step's component (saving inline code); errors name their fields. */
  private async definition(accountId: string, input: WorkflowInput, existing?: { row: WorkflowRow; previous: WorkflowConfig }): Promise<WorkflowConfig> {
    const errors: FieldError[] = [];
    const name = input.name ?? existing?.previous.name;
    if (!name) errors.push({ field: 'name', message: 'is required' });
    const trigger = input.trigger === undefined && existing ? existing.previous.trigger : parseTrigger(input.trigger, errors);
    const settings = input.settings === undefined && existing ? existing.previous.settings : parseSettings(input.settings, errors);
    let steps: WorkflowStepConfig[] | undefined = existing?.previous.steps;
    if (input.steps !== undefined || !existing) {
      const parsed = parseSteps(input.steps, errors);
      if (errors.length) throw new InvalidFieldsError(errors);
      steps = [];
      for (const [i, s] of parsed.entries()) steps.push(await this.step(accountId, s, `steps[${i}]`, errors));
    }
    if (trigger?.type === 'emitter') this.checkEmitter(accountId, trigger.emitterId, existing?.row.id, errors);
    if (errors.length || !trigger || !steps || !name) throw new InvalidFieldsError(errors);
    const q = this.rt.queries.workflows;
    const nameSlug = existing && name === existing.row.name ? existing.row.name_slug
      : uniqueSlug(slugify(name), (sl) => { const o = q.workflowBySlug(accountId, sl); return o !== undefined && o.id !== existing?.row.id; });
    return {
      name, nameSlug, active: input.active ?? (existing ? existing.row.active === 1 : true), trigger, steps, settings,
      ...(trigger.type === 'http' ? { endpointKey: existing?.previous.endpointKey ?? randomToken(18) } : {}),
    };
  }

  private checkEmitter(accountId: string, emitterId: string, self: string | undefined, errors: FieldError[]): void {
    const field = 'trigger.emitter_id';
    if (emitterId.startsWith('dc_')) {
      const src = this.rt.queries.source(emitterId);
      if (!src || src.account_id !== accountId) errors.push({ field, message: `source ${emitterId} not found` });
    } else if (emitterId.startsWith('p_')) {
      const wf = this.rt.queries.workflows.workflow(emitterId);
      if (!wf || wf.account_id !== accountId) errors.push({ field, message: `workflow ${emitterId} not found` });
      else if (emitterId === self) errors.push({ field, message: 'a workflow cannot be triggered by itself' });
    } else {
      errors.push({ field, message: 'must be a source (dc_...) or workflow (p_...) id' });
    }
  }

  private async step(accountId: string, s: WorkflowStepInput, f: string, errors: FieldError[]): Promise<WorkflowStepConfig> {
    let componentId: string;
    if (s.key && s.key.includes('@')) {
      // The account's own published version, else a built-in of that version (resolve's order).
      try {
        componentId = (await this.components.resolve(accountId, { key: s.key }, true))!;
      } catch (err) {
        if (err instanceof NotFoundError) throw new NotFoundError(`registry component ${s.key}`, `${f}.key`);
        throw err;
      }
    } else {
      componentId = (await this.components.resolve(accountId, { id: s.component_id, code: s.component_code, key: s.key }, true))!;
    }
    const row = this.rt.queries.component(componentId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`component ${componentId}`, `${f}.component_id`);
    const comp = this.rt.component(componentId)!;
    const def = comp.definition;
    if (def.type !== 'action') {
      errors.push({ field: f, message: `is a ${def.type}; a step must be an action` });
      return { name: s.name, componentId, configuredProps: {} };
    }
    const given = s.configured_props;
    // additionalProps() sees the literal values; a prop given as a reference is unknown until the run.
    const props = await effectiveProps(this.rt, accountId, comp, propsWithoutReferences(given));
    const checked = validateConfiguredProps(props, propsWithoutReferences(given), this.rt.box);
    // App props are checked on what was given: a `{{steps...}}` reference there is refused, so a
    // trigger's data can never choose which connected account's credentials a step gets.
    const appChecked = checkConfiguredProps(this.rt, accountId, props.filter((p) => baseType(p.type).base === 'app'), appPropsOf(props, given));
    checked.errors.push(...appChecked.errors);
    Object.assign(checked.values, appChecked.values);
    // Props given as exact references are typed at run time, so their checks wait for the run.
    const appNames = new Set(def.props.filter((p) => baseType(p.type).base === 'app').map((p) => p.name));
    const referenced = Object.fromEntries(Object.entries(given).filter(([k, v]) => isExactReference(v) && !appNames.has(k)));
    for (const e of checked.errors) {
      const prop = e.field.replace(/^configured_props\./, '').split('.')[0];
      if (prop in referenced) continue;
      errors.push({ field: `${f}.${e.field}`, message: e.message });
    }
    return { name: s.name, componentId, ...(s.key ? { key: s.key } : {}), configuredProps: { ...checked.values, ...referenced } };
  }
}

/** The given values of a component's app props only. */
function appPropsOf(props: PropDefinition[], given: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of props) if (baseType(p.type).base === 'app' && given[p.name] !== undefined) out[p.name] = given[p.name];
  return out;
}
