import type Database from 'better-sqlite3';
import type { SluiceConfig } from '@app/config';
import type { EventStore, StoredEvent } from '@app/event-store';
import { ComponentDefinition, SealedSecret, SecretBox, Streams } from '@app/domain';
import { AppQueries, ComponentRow, ConnectedAccountRow, ReadModelQueries, SourceRow, SubscriptionRow, WebhookRow, WorkflowQueries, WorkflowRow } from '@app/projections';
import { hashApiKey } from './api-key-hash';
import { AppDirectory, ResolvedApp } from './app-directory';
import { NotFoundError } from './engine-errors';

/** What the query side needs from the runtime besides the read models. */
export interface EngineQueriesDeps {
  config: SluiceConfig;
  box: SecretBox;
  store: EventStore;
  /** A saved component's parsed definition (cached by the runtime). */
  definition(componentId: string): ComponentDefinition | undefined;
}

/**
 * The engine's read side: the read-model queries plus the ownership rules every read and write
 * shares (another account's resource is "not found", never "forbidden", so ids leak nothing).
 * Read-only: nothing here appends.
 */
export class EngineQueries extends ReadModelQueries {
  /** Workflows and their runs. */
  readonly workflows: WorkflowQueries;
  /** Operators' apps and connected accounts. */
  readonly apps: AppQueries;
  /** The apps each account sees: the catalog and its own. */
  readonly appDirectory: AppDirectory;

  constructor(db: Database.Database, private readonly deps: EngineQueriesDeps) {
    super(db);
    this.workflows = new WorkflowQueries(db);
    this.apps = new AppQueries(db);
    this.appDirectory = new AppDirectory({ queries: this.apps, box: deps.box, clients: deps.config.oauthClients });
  }

  /** Every app the account can connect accounts of (catalog first, then its own). */
  visibleApps(accountId: string): ResolvedApp[] {
    return this.appDirectory.list(accountId);
  }

  /** A connected account (`apn_...`) of the account; another account's is not found. */
  ownConnectedAccount(accountId: string, id: string): ConnectedAccountRow {
    const row = this.apps.connectedAccount(id);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`connected account ${id}`);
    return row;
  }

  /** The URL `/e/<key>` endpoints are published under (set once the server listens). */
  get publicUrl(): string {
    return this.deps.config.publicUrl;
  }

  /** The account an API key (not revoked) belongs to. */
  accountForApiKey(key: string): string | undefined {
    return this.accountIdForKeyHash(hashApiKey(key));
  }

  /** A workflow (`p_...`) with its account, for subscriptions that name one. */
  workflow(workflowId: string): { id: string; account_id: string } | undefined {
    return this.workflows.workflow(workflowId);
  }

  /** A saved component's definition, parsed once. */
  componentDefinition(componentId: string): ComponentDefinition | undefined {
    return this.deps.definition(componentId);
  }

  /** A source of the account by id or name slug; one still deploying is not visible yet. */
  ownSource(accountId: string, idOrSlug: string): SourceRow {
    const row = idOrSlug.startsWith('dc_') ? this.source(idOrSlug) : this.sourceBySlug(accountId, idOrSlug);
    if (!row || row.account_id !== accountId || row.status === 'deploying') throw new NotFoundError(`source ${idOrSlug}`);
    return row;
  }

  /** A workflow of the account by id (`p_...`) or name slug. */
  ownWorkflow(accountId: string, idOrSlug: string): WorkflowRow {
    const row = idOrSlug.startsWith('p_') ? this.workflows.workflow(idOrSlug) : this.workflows.workflowBySlug(accountId, idOrSlug);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`workflow ${idOrSlug}`);
    return row;
  }

  ownWebhook(accountId: string, webhookId: string): WebhookRow {
    const row = this.webhook(webhookId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`webhook ${webhookId}`);
    return row;
  }

  ownSubscription(accountId: string, subscriptionId: string): SubscriptionRow {
    const row = this.subscription(subscriptionId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`subscription ${subscriptionId}`);
    return row;
  }

  /** A saved component of the account, by id (`sc_...`) or by key (its newest save). */
  ownComponent(accountId: string, idOrKey: string): ComponentRow {
    const row = idOrKey.startsWith('sc_') ? this.component(idOrKey) : this.componentByKey(accountId, idOrKey);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`component ${idOrKey}`);
    return row;
  }

  /** The newest published version of a key in the account's registry. */
  registryEntry(accountId: string, key: string): { key: string; version: string; type: string; component_id: string } {
    const entry = this.registry(accountId).find((r) => r.key === key);
    if (!entry) throw new NotFoundError(`registry component ${key}`);
    return entry;
  }

  /** The current signing secret of a webhook of the account, in clear. */
  webhookSigningSecret(accountId: string, webhookId: string): string {
    return this.deps.box.open(JSON.parse(this.ownWebhook(accountId, webhookId).secret) as SealedSecret);
  }

  /** A page of a source's own stream (its audit trail), from a stream revision on, with the stream's length. */
  async sourceHistory(accountId: string, idOrSlug: string, fromRevision: bigint, limit: number): Promise<{ events: StoredEvent[]; total: number }> {
    const row = this.ownSource(accountId, idOrSlug);
    const stream = Streams.source(row.id);
    const events = await this.deps.store.readStream(stream, { fromRevision, maxCount: limit });
    return { events, total: Number(await this.deps.store.streamRevision(stream)) + 1 };
  }
}
