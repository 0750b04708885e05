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
export const READ_MODEL_VERSION = 7;

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
