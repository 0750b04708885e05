import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SluiceConfig } from '@app/config';
import { randomToken } from '@app/domain';
import type { EmittedSummary, LoggedEntry } from '@app/projections';
import type { EngineQueries } from './engine-queries';
import { EngineRuntime } from './engine-runtime';
import { PRIVATE_FILE_MODE, tightenIfPresent } from './private-files';
import { AccountUseCases } from './use-cases/account-use-cases';
import { AppUseCases } from './use-cases/app-use-cases';
import { ActionUseCases } from './use-cases/action-use-cases';
import { ComponentUseCases } from './use-cases/component-use-cases';
import { EndpointUseCases } from './use-cases/endpoint-use-cases';
import { PropUseCases } from './use-cases/prop-use-cases';
import { SourceUseCases } from './use-cases/source-use-cases';
import { SubscriptionUseCases } from './use-cases/subscription-use-cases';
import { WebhookUseCases } from './use-cases/webhook-use-cases';
import { WorkflowUseCases } from './use-cases/workflow-use-cases';
import { TimerScheduler } from './timer-scheduler';
import { WorkflowRunner, WorkflowSseMessage } from './workflow-runner';
import { SluiceSendPerformer } from './workflow-sends';
import type { WorkflowConfig } from '@app/domain';
import { WorkflowConfigs } from './workflow-configs';

/**
 * The embedded engine, used by the HTTP server, the admin CLI and the benchmarks so they all run
 * the same code. Writes go through the use cases (`accounts`, `apps`, `sources`, `webhooks`, `actions`,
 * `subscriptions`, `components`, `endpoints`), reads through `queries`; the runtime behind them
 * (store, actors, sender, timers, sandbox, key box) is not reachable from outside.
 */
export class SluiceEngine {
  private readonly rt: EngineRuntime;
  readonly queries: EngineQueries;
  readonly accounts: AccountUseCases;
  readonly components: ComponentUseCases;
  readonly subscriptions: SubscriptionUseCases;
  readonly webhooks: WebhookUseCases;
  readonly sources: SourceUseCases;
  readonly endpoints: EndpointUseCases;
  readonly workflows: WorkflowUseCases;
  private readonly workflowRunner: WorkflowRunner;
  private readonly workflowTimers: TimerScheduler;
  readonly actions: ActionUseCases;
  /** Prop configuration as a UI does it: options pages and props reloaded by `additionalProps()`. */
  readonly props: PropUseCases;
  /** Apps and connected accounts (`apn_...`), OAuth connections. */
  readonly apps: AppUseCases;
  private stopped = false;
  private _bootstrapKey?: { accountId: string; key: string; file: string };

  constructor(readonly config: SluiceConfig, opts: { sandbox?: boolean } = {}) {
    this.rt = new EngineRuntime(config, opts);
    this.queries = this.rt.queries;
    this.accounts = new AccountUseCases(this.rt);
    this.components = new ComponentUseCases(this.rt);
    this.subscriptions = new SubscriptionUseCases(this.rt);
    this.webhooks = new WebhookUseCases(this.rt);
    this.sources = new SourceUseCases(this.rt, this.components, this.subscriptions);
    this.endpoints = new EndpointUseCases(this.rt);
    this.actions = new ActionUseCases(this.rt, this.components);
    this.props = new PropUseCases(this.rt);
    this.apps = new AppUseCases(this.rt);
    const rt = this.rt;
    const configs = new WorkflowConfigs();
    const workflowConfig = (id: string): WorkflowConfig | undefined => {
      const row = rt.workflowDefinition(id);
      return row ? configs.of(row) : undefined;
    };
    this.workflowRunner = new WorkflowRunner({
      store: rt.store, box: rt.box, component: (id) => rt.component(id), invoke: (inv, accountId) => rt.invoke(accountId, inv),
      sends: new SluiceSendPerformer({ dataDir: config.dataDir, componentEgressAllow: config.componentEgressAllow, sends: config.sends }),
      stepDb: async (workflowId, stepName) => {
        await rt.settle();
        return rt.queries.workflows.stepDb(workflowId, stepName);
      },
      stepTimeoutMs: config.sandboxTimeoutMs,
      concurrency: (id) => workflowConfig(id)?.settings.concurrency ?? 1,
      recordLingerMs: config.requestLingerMs,
      chainSteps: config.workflowChain,
      chainable: (comp) => !rt.needsAccounts(comp.codeHash),
      maxRunsWaiting: config.workflowMaxWaitingRuns,
      // A lane that refused emits has drained: the dispatcher hands its pending emits over again.
      onRoom: (id) => rt.dispatcher.listenerHasRoom(id),
    });
    // Workflow timers reuse the sources' scheduler: a workflow with a timer trigger is a "live source" to it.
    this.workflowTimers = new TimerScheduler({
      liveSources: () => rt.queries.workflows.workflowsWithTrigger('timer').map((w) => ({ id: w.id, active: w.active, status: 'deployed' })),
      timerOf: (id) => {
        const t = workflowConfig(id)?.trigger;
        if (t?.type !== 'timer') return undefined;
        return { propName: 'trigger', timer: t.cron !== undefined ? { cron: t.cron, timezone: t.timezone } : { intervalSeconds: t.intervalSeconds } };
      },
      lastFire: (id) => rt.queries.workflows.workflow(id)?.last_timer_at ?? undefined,
      fire: (id, event) => this.workflows.fireTimer(id, event),
    });
    this.workflows = new WorkflowUseCases(rt, this.workflowRunner, this.components, this.subscriptions, (id) => this.workflowTimers.refresh(id), configs);
    // Subscriptions with a workflow as listener start its runs through this port.
    rt.workflowListener = this.workflows;
  }

  /** Listens to a workflow's `$.send.sse` messages; returns the function that stops listening. */
  onWorkflowSse(workflowId: string, listener: (m: WorkflowSseMessage) => void): () => void {
    this.workflowRunner.sse.on(workflowId, listener);
    return () => this.workflowRunner.sse.off(workflowId, listener);
  }

  /** Set when the first start created an account. */
  get bootstrapKey(): { accountId: string; key: string; file: string } | undefined {
    return this._bootstrapKey;
  }

  /** Listens to a source's emits once they are in the read models (SSE); returns the function that stops listening. */
  onEmitted(sourceId: string, listener: (e: EmittedSummary) => void): () => void {
    this.rt.emits.on(sourceId, listener);
    return () => this.rt.emits.off(sourceId, listener);
  }

  /** Listens to a source's run and hook log entries once they are in the read models (SSE); returns the function that stops listening. */
  onLogged(sourceId: string, listener: (e: LoggedEntry) => void): () => void {
    this.rt.logs.on(sourceId, listener);
    return () => this.rt.logs.off(sourceId, listener);
  }

  /** Calls `listener` once the source's deletion is in the read models (live streams end then); returns the function that stops listening. */
  onSourceGone(sourceId: string, listener: () => void): () => void {
    this.rt.sourceGone.on(sourceId, listener);
    return () => this.rt.sourceGone.off(sourceId, listener);
  }

  /** Calls `listener` after each commit that appended to the log (whatever recorded it); returns the function that stops listening. */
  onActivity(listener: () => void): () => void {
    return this.rt.store.onAppended(() => listener());
  }

  /** Starts only the read models (admin commands: the server must not be running). */
  async startReadModels(): Promise<void> {
    await this.rt.startReadModels();
  }

  /** Drops every read model and rebuilds it from the log (admin); returns the log's head position. */
  async rebuildReadModels(): Promise<bigint> {
    await this.rt.rebuildReadModels();
    return this.rt.store.headPosition();
  }

  /**
   * Starts everything in the order that keeps the guarantees: read models catch up first, then
   * the first account is created if the store is empty, then interrupted lifecycle transitions and
   * recorded-but-unrun requests are resumed, and only then do the timers start.
   */
  async start(): Promise<void> {
    await this.rt.startReadModels();
    if (this.queries.accountCount() === 0) await this.bootstrapAccount();
    if (!this.rt.sandboxDisabled) await this.rt.sandbox.start();
    this.rt.goLive();
    this.rt.sender.start();
    if (!this.rt.sandboxDisabled) {
      await this.rt.recover();
      this.workflows.resumeUnfinished();
      // After requests: emits recorded before a crash reach their listeners now.
      this.rt.dispatcher.start();
      this.rt.timers.start();
      this.workflowTimers.start();
      this.rt.auth.start();
    }
  }

  private async bootstrapAccount(): Promise<void> {
    const key = this.config.apiKey ?? `sk_${randomToken(24)}`;
    const accountId = await this.accounts.create('default', key);
    const file = join(this.config.dataDir, 'api-key');
    writeFileSync(file, `${key}\n`, { mode: PRIVATE_FILE_MODE });
    tightenIfPresent(file);
    this._bootstrapKey = { accountId, key, file };
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.rt.timers.stop();
    await this.workflowTimers.stop();
    await this.rt.auth.stop();
    await this.rt.dispatcher.stop();
    await this.rt.sender.stop();
    await this.rt.projections.stop();
    if (!this.rt.sandboxDisabled) await this.rt.sandbox.stop();
    await this.rt.store.close();
  }
}
