import { ComponentDefinition, newId, randomToken, runtimeProps, slugify, SourceConfig, uniqueSlug } from '@app/domain';
import type { SourceRow } from '@app/projections';
import { checkConfiguredProps } from '../configured-props-check';
import { ConflictError, DeleteHookFailedError, InvalidFieldsError, NotFoundError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';
import { effectiveProps } from '../prop-configuration';
import { HookFailedError, RunOutcome } from '../source-actor';
import type { ComponentRef, ComponentUseCases } from './component-use-cases';
import { cascadeDeleteSubscriptions } from './subscription-cascade';
import type { SubscriptionUseCases } from './subscription-use-cases';

/** A deploy request: the component and, optionally, the name, the configured props and whether it starts active. */
export interface DeploySource {
  component: ComponentRef;
  name?: string;
  configuredProps?: Record<string, unknown>;
  active: boolean;
}

/** An update: only what is given changes (props replace the previous ones as a whole). */
export interface UpdateSource {
  component?: ComponentRef;
  name?: string;
  configuredProps?: Record<string, unknown>;
  active?: boolean;
}

/**
 * The sources' lifecycle (deploy, update, delete with their hooks, run by the source's actor),
 * manual runs and clearing emitted events. Timers and actors follow the committed lifecycle
 * events (`runCommittedSideEffects`); nothing here touches them.
 */
export class SourceUseCases {
  constructor(
    private readonly rt: EngineRuntime,
    private readonly components: ComponentUseCases,
    private readonly subscriptions: SubscriptionUseCases,
  ) {}

  /** Deploys a source (hooks `deploy` then `activate`), then applies the account's auto-subscriptions; returns its id. */
  async deploy(accountId: string, d: DeploySource): Promise<string> {
    this.rt.assertWritable();
    const componentId = (await this.components.resolve(accountId, d.component, true))!;
    const def = this.sourceComponent(accountId, componentId);
    // Props added by additionalProps() for these values are required and sealed like static ones.
    const props = await effectiveProps(this.rt, accountId, this.rt.component(componentId)!, d.configuredProps ?? {});
    const { values, errors } = checkConfiguredProps(this.rt, accountId, props, d.configuredProps);
    if (errors.length) throw new InvalidFieldsError(errors);
    const name = d.name ?? def.name;
    const config: SourceConfig = {
      componentId,
      name,
      nameSlug: uniqueSlug(slugify(name), (s) => this.rt.queries.sourceBySlug(accountId, s) !== undefined),
      configuredProps: values,
      active: d.active,
      endpointKey: def.props.some((p) => p.type === '$.interface.http') ? randomToken(18) : undefined,
    };
    const sourceId = newId('dc');
    // Auto-subscriptions apply to every source deployed after them, and are made before its hooks
    // run, so the history a `deploy` hook emits reaches them like any later emit.
    const autoSubscribe = async () => {
      await this.rt.settle();
      for (const auto of this.rt.queries.autoSubscriptions(accountId)) {
        await this.subscriptions.create(accountId, { emitterId: sourceId, listenerId: auto.listener_id, eventName: auto.event_name });
      }
    };
    try {
      await this.rt.actor(sourceId).deploy(accountId, config, accountId, autoSubscribe);
    } catch (err) {
      // A source whose deploy failed emits nothing more: it keeps no subscriptions.
      if (err instanceof HookFailedError) {
        await this.rt.settle();
        const subs = this.rt.queries.subscriptionsByEmitter(sourceId).map((s) => s.id);
        await cascadeDeleteSubscriptions(this.rt, accountId, subs, `source ${sourceId} failed to deploy`);
      }
      throw err;
    } finally {
      await this.rt.settle();
    }
    return sourceId;
  }

  /** Updates a deployed source in place (hooks `deactivate` with the old config, `activate` with the new); returns its id. */
  async update(accountId: string, idOrSlug: string, u: UpdateSource): Promise<string> {
    this.rt.assertWritable();
    const row = this.rt.queries.ownSource(accountId, idOrSlug);
    const componentId = (u.component && (await this.components.resolve(accountId, u.component, false))) ?? row.component_id;
    if (row.status !== 'deployed') throw new ConflictError(`source ${row.id} is ${row.status}; try again when it is deployed`);
    const def = this.sourceComponent(accountId, componentId);
    const previous = JSON.parse(row.configured_props) as Record<string, unknown>;
    // The added props depend on the values: those given, else the ones the source runs with now.
    const props = await effectiveProps(this.rt, accountId, this.rt.component(componentId)!, u.configuredProps ?? runtimeProps(previous, this.rt.box));
    const { values, errors } = checkConfiguredProps(this.rt, accountId, props, u.configuredProps, u.configuredProps ? undefined : previous);
    if (errors.length) throw new InvalidFieldsError(errors);
    const name = u.name ?? row.name;
    const hasHttp = def.props.some((p) => p.type === '$.interface.http');
    const config: SourceConfig = {
      componentId,
      name,
      nameSlug: name === row.name ? row.name_slug
        : uniqueSlug(slugify(name), (s) => { const o = this.rt.queries.sourceBySlug(accountId, s); return o !== undefined && o.id !== row.id; }),
      configuredProps: values,
      active: u.active ?? row.active === 1,
      // The endpoint URL survives updates: callers registered it elsewhere.
      endpointKey: hasHttp ? (row.endpoint_key ?? randomToken(18)) : undefined,
    };
    try {
      await this.rt.actor(row.id).update(config, accountId);
    } finally {
      await this.rt.settle();
    }
    return row.id;
  }

  /**
   * Deletes a deployed source (hook `deactivate`; with `ignoreHookErrors` even if it throws) and,
   * recorded one by one, the subscriptions to it; returns its id.
   */
  async delete(accountId: string, idOrSlug: string, opts: { ignoreHookErrors: boolean }): Promise<string> {
    this.rt.assertWritable();
    const row = this.deployed(accountId, idOrSlug);
    try {
      await this.rt.actor(row.id).delete(opts.ignoreHookErrors, accountId);
    } catch (err) {
      if (err instanceof HookFailedError) {
        await this.rt.settle();
        throw new DeleteHookFailedError(err);
      }
      throw err;
    }
    // Its subscriptions go with it, both those it emits to and those it listens to.
    const subs = [...new Set([...this.rt.queries.subscriptionsByEmitter(row.id), ...this.rt.queries.subscriptionsByListener(row.id)].map((s) => s.id))];
    await cascadeDeleteSubscriptions(this.rt, accountId, subs, `source ${row.id} deleted`);
    await this.rt.settle();
    return row.id;
  }

  /** Runs a deployed source once now and returns what the run did. */
  async runNow(accountId: string, idOrSlug: string): Promise<RunOutcome> {
    this.rt.assertWritable();
    const row = this.deployed(accountId, idOrSlug);
    const outcome = await this.rt.actor(row.id).run('manual', { timestamp: Math.floor(Date.now() / 1000), manual: true });
    if (!outcome) throw new ConflictError(`source ${row.id} has nothing to run`);
    return outcome;
  }

  /** Clears the emitted events between two summary ids (inclusive; none: all); returns the source id. */
  async clearEvents(accountId: string, idOrSlug: string, range: { startId?: string; endId?: string }): Promise<string> {
    this.rt.assertWritable();
    const row = this.rt.queries.ownSource(accountId, idOrSlug);
    await this.rt.actor(row.id).clearEvents(range.startId, range.endId, accountId);
    await this.rt.settle();
    return row.id;
  }

  private deployed(accountId: string, idOrSlug: string): SourceRow {
    const row = this.rt.queries.ownSource(accountId, idOrSlug);
    if (row.status !== 'deployed') throw new ConflictError(`source ${row.id} is ${row.status}`);
    return row;
  }

  /** A component of the account that can be deployed as a source. */
  private sourceComponent(accountId: string, componentId: string): ComponentDefinition {
    const row = this.rt.queries.component(componentId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`component ${componentId}`, 'component_id');
    const def = this.rt.component(componentId)!.definition;
    if (def.type !== 'source') throw new InvalidFieldsError([{ field: 'component_id', message: `is an ${def.type}; only sources can be deployed` }]);
    return def;
  }
}
