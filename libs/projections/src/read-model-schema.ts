import { AccountsReadModel } from './read-models/accounts.read-model';
import { AppsReadModel } from './read-models/apps.read-model';
import { ConnectedAccountsReadModel } from './read-models/connected-accounts.read-model';
import { ComponentsReadModel } from './read-models/components.read-model';
import { DeliveriesReadModel } from './read-models/deliveries.read-model';
import { ListenerDispatchesReadModel } from './read-models/listener-dispatches.read-model';
import { PendingRequestsReadModel } from './read-models/pending-requests.read-model';
import type { ReadModelTables } from './read-models/read-model';
import { SourceEventsReadModel } from './read-models/source-events.read-model';
import { SourceLogsReadModel } from './read-models/source-logs.read-model';
import { SourcesReadModel } from './read-models/sources.read-model';
import { SubscriptionsReadModel } from './read-models/subscriptions.read-model';
import { WebhooksReadModel } from './read-models/webhooks.read-model';
import { WorkflowRunsReadModel } from './read-models/workflow-runs.read-model';
import { WorkflowsReadModel } from './read-models/workflows.read-model';
import { WorkflowStepDbReadModel } from './read-models/workflow-step-db.read-model';

/** Bumped whenever the schema below changes: a store with another version rebuilds its read models from the log at start. */
export const READ_MODEL_VERSION = 14;

/** The tables of every read model, each owned by one read-model module. */
const DEFINITIONS: readonly ReadModelTables[] = [
  AccountsReadModel.definition, WebhooksReadModel.definition, SubscriptionsReadModel.definition, ComponentsReadModel.definition,
  SourcesReadModel.definition, SourceEventsReadModel.definition, SourceLogsReadModel.definition, DeliveriesReadModel.definition,
  PendingRequestsReadModel.definition, ListenerDispatchesReadModel.definition, WorkflowsReadModel.definition,
  WorkflowRunsReadModel.definition, WorkflowStepDbReadModel.definition, AppsReadModel.definition, ConnectedAccountsReadModel.definition,
];

/** Tables of the read models. All of them are projections: dropping and replaying the log rebuilds them. */
export const READ_MODEL_TABLES: readonly string[] = DEFINITIONS.flatMap((d) => d.tables);

/** DDL of every read-model table (each module's, in the order above) and of the processors' checkpoints. */
export const READ_MODEL_SCHEMA = `${DEFINITIONS.map((d) => d.schema).join('')}
CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;

/**
 * Secondary indexes a fold statement looks rows up by (subscribers of an emit, dispatches of a
 * listener, runs of a workflow, deliveries of a deleted webhook): a rebuild keeps them while it
 * replays, so no fold ever scans a whole table per event.
 */
export const FOLD_INDEXES: ReadonlySet<string> = new Set([
  'rm_subscriptions_emitter', 'rm_listener_dispatches_listener', 'rm_workflow_runs_wf', 'rm_deliveries_webhook',
]);

const STATEMENTS = READ_MODEL_SCHEMA.split(';').map((s) => s.trim()).filter((s) => s.length > 0);
const indexName = (stmt: string): string | undefined => /^CREATE\s+(?:UNIQUE\s+)?INDEX\s+IF\s+NOT\s+EXISTS\s+(\w+)/i.exec(stmt)?.[1];

/**
 * The secondary indexes only queries use (every index of the schema but {@link FOLD_INDEXES}):
 * a rebuild creates them after the load, one sort each instead of a B-tree insert per row. An
 * index never changes what a table holds, so the rebuilt rows are the same either way.
 */
export const READ_MODEL_DEFERRED_INDEXES: readonly string[] = STATEMENTS
  .filter((s) => { const name = indexName(s); return name !== undefined && !FOLD_INDEXES.has(name); })
  .map((s) => `${s};`);

/** {@link READ_MODEL_SCHEMA} without {@link READ_MODEL_DEFERRED_INDEXES}: what a rebuild loads into. */
export const READ_MODEL_LOAD_SCHEMA: string = STATEMENTS
  .filter((s) => { const name = indexName(s); return name === undefined || FOLD_INDEXES.has(name); })
  .map((s) => `${s};`).join('\n');
