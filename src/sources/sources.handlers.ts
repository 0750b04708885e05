import { Inject } from '@nestjs/common';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CreateSubscriptionCommand } from '../subscriptions/subscriptions.commands';
import {
  ComponentDefinition, EventTypes, newId, randomToken, slugify, SourceConfig, Streams, uniqueSlug, validateConfiguredProps,
} from '@app/domain';
import type { SourceRow } from '@app/projections';
import { ApiError } from '../http/api-error';
import { SluiceEngine, HookFailedError } from '@app/engine';
import { DeleteSourceCommand, DeploySourceCommand, UpdateSourceCommand } from './sources.commands';

/** A source of the account (by id or name slug), or 404. */
export function ownSource(engine: SluiceEngine, accountId: string, idOrSlug: string): SourceRow {
  const row = idOrSlug.startsWith('dc_') ? engine.queries.source(idOrSlug) : engine.queries.sourceBySlug(accountId, idOrSlug);
  if (!row || row.account_id !== accountId || row.status === 'deploying') throw ApiError.notFound(`source ${idOrSlug}`);
  return row;
}

/** A component of the account that can be deployed as a source, or a 400/404 naming the field. */
export function sourceComponent(engine: SluiceEngine, accountId: string, componentId: string): ComponentDefinition {
  const row = engine.queries.component(componentId);
  if (!row || row.account_id !== accountId) throw new ApiError(404, 'not_found', `component ${componentId} not found`, { fields: { component_id: 'not found' } });
  const def = engine.component(componentId)!.definition;
  if (def.type !== 'source') throw ApiError.fields([{ field: 'component_id', message: `is an ${def.type}; only sources can be deployed` }]);
  return def;
}

function hookFailed(err: HookFailedError): ApiError {
  return new ApiError(400, 'hook_failed', err.message, { hook: err.hook, error: err.error, logs: err.logs });
}

@CommandHandler(DeploySourceCommand)
export class DeploySourceHandler implements ICommandHandler<DeploySourceCommand, string> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine, @Inject(CommandBus) private readonly commands: CommandBus) {}

  async execute(c: DeploySourceCommand): Promise<string> {
    const def = sourceComponent(this.engine, c.accountId, c.componentId);
    const { values, errors } = validateConfiguredProps(def.props, c.configuredProps, this.engine.box);
    if (errors.length) throw ApiError.fields(errors);
    const name = c.name ?? def.name;
    const config: SourceConfig = {
      componentId: c.componentId,
      name,
      nameSlug: uniqueSlug(slugify(name), (s) => this.engine.queries.sourceBySlug(c.accountId, s) !== undefined),
      configuredProps: values,
      active: c.active,
      endpointKey: def.props.some((p) => p.type === '$.interface.http') ? randomToken(18) : undefined,
    };
    const sourceId = newId('dc');
    try {
      await this.engine.actor(sourceId).deploy(c.accountId, config, c.accountId);
    } catch (err) {
      if (err instanceof HookFailedError) throw hookFailed(err);
      throw err;
    } finally {
      await this.engine.settle();
    }
    this.engine.timers.refresh(sourceId);
    // Auto-subscriptions apply to every source deployed after them.
    for (const auto of this.engine.queries.autoSubscriptions(c.accountId)) {
      await this.commands.execute(new CreateSubscriptionCommand(c.accountId, sourceId, auto.listener_id, auto.event_name));
    }
    return sourceId;
  }
}

@CommandHandler(UpdateSourceCommand)
export class UpdateSourceHandler implements ICommandHandler<UpdateSourceCommand, void> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async execute(c: UpdateSourceCommand): Promise<void> {
    const row = ownSource(this.engine, c.accountId, c.sourceId);
    if (row.status !== 'deployed') throw new ApiError(409, 'conflict', `source ${row.id} is ${row.status}; try again when it is deployed`);
    const componentId = c.componentId ?? row.component_id;
    const def = sourceComponent(this.engine, c.accountId, componentId);
    const previous = JSON.parse(row.configured_props) as Record<string, unknown>;
    const { values, errors } = validateConfiguredProps(def.props, c.configuredProps, this.engine.box, c.configuredProps ? undefined : previous);
    if (errors.length) throw ApiError.fields(errors);
    const name = c.name ?? row.name;
    const hasHttp = def.props.some((p) => p.type === '$.interface.http');
    const config: SourceConfig = {
      componentId,
      name,
      nameSlug: name === row.name ? row.name_slug
        : uniqueSlug(slugify(name), (s) => { const o = this.engine.queries.sourceBySlug(c.accountId, s); return o !== undefined && o.id !== row.id; }),
      configuredProps: values,
      active: c.active ?? row.active === 1,
      // The endpoint URL survives updates: callers registered it elsewhere.
      endpointKey: hasHttp ? (row.endpoint_key ?? randomToken(18)) : undefined,
    };
    try {
      await this.engine.actor(row.id).update(config, c.accountId);
    } catch (err) {
      if (err instanceof HookFailedError) throw hookFailed(err);
      throw err;
    } finally {
      await this.engine.settle();
      this.engine.timers.refresh(row.id);
    }
  }
}

@CommandHandler(DeleteSourceCommand)
export class DeleteSourceHandler implements ICommandHandler<DeleteSourceCommand, void> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async execute(c: DeleteSourceCommand): Promise<void> {
    const row = ownSource(this.engine, c.accountId, c.sourceId);
    if (row.status !== 'deployed') throw new ApiError(409, 'conflict', `source ${row.id} is ${row.status}`);
    try {
      await this.engine.actor(row.id).delete(c.ignoreHookErrors, c.accountId);
    } catch (err) {
      if (err instanceof HookFailedError) {
        await this.engine.settle();
        throw new ApiError(400, 'hook_failed', `${err.message} (pass ignore_hook_errors=true to delete anyway)`, { hook: err.hook, error: err.error, logs: err.logs });
      }
      throw err;
    }
    for (const sub of this.engine.queries.subscriptionsByEmitter(row.id)) {
      await this.engine.store.append(Streams.subscription(sub.id), [{
        type: EventTypes.subscriptionDeleted, data: { subscriptionId: sub.id, accountId: c.accountId, reason: `source ${row.id} deleted` },
        metadata: { actor: c.accountId },
      }]);
    }
    this.engine.dropActor(row.id);
    await this.engine.settle();
    this.engine.timers.refresh(row.id);
  }
}

export const SOURCE_HANDLERS = [DeploySourceHandler, UpdateSourceHandler, DeleteSourceHandler];
