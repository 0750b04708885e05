import type { SealedSecret } from './secret-box';

/**
 * Event type names and payloads. Type strings are stable and versioned; never rename one,
 * add a `.v2` instead. Streams: `account-<u>`, `webhook-<wh>`, `subscription-<sub>`,
 * `component-<sc>`, `source-<dc>`, `inbox-<dc>` (HTTP requests), `delivery-<wh>`.
 */
export const EventTypes = {
  accountCreated: 'account.created.v1',
  apiKeyIssued: 'account.api_key_issued.v1',
  apiKeyRevoked: 'account.api_key_revoked.v1',
  webhookCreated: 'webhook.created.v1',
  webhookUpdated: 'webhook.updated.v1',
  webhookSecretRotated: 'webhook.secret_rotated.v1',
  webhookDeleted: 'webhook.deleted.v1',
  subscriptionCreated: 'subscription.created.v1',
  subscriptionDeleted: 'subscription.deleted.v1',
  autoSubscriptionCreated: 'auto_subscription.created.v1',
  componentSaved: 'component.saved.v1',
  componentPublished: 'component.published.v1',
  sourceDeployRequested: 'source.deploy_requested.v1',
  sourceHookRan: 'source.hook_ran.v1',
  sourceDeployed: 'source.deployed.v1',
  sourceDeployFailed: 'source.deploy_failed.v1',
  sourceUpdateRequested: 'source.update_requested.v1',
  sourceUpdated: 'source.updated.v1',
  sourceUpdateFailed: 'source.update_failed.v1',
  sourceDeleteRequested: 'source.delete_requested.v1',
  sourceDeleted: 'source.deleted.v1',
  sourceDeleteFailed: 'source.delete_failed.v1',
  sourceRunCompleted: 'source.run_completed.v1',
  sourceEventEmitted: 'source.event_emitted.v1',
  sourceDbSet: 'source.db_set.v1',
  sourceEventsCleared: 'source.events_cleared.v1',
  httpRequestReceived: 'source.http_request_received.v1',
  deliveryAttemptFailed: 'delivery.attempt_failed.v1',
  deliverySucceeded: 'delivery.delivered.v1',
  deliveryExhausted: 'delivery.exhausted.v1',
  deliveryRetryRequested: 'delivery.retry_requested.v1',
} as const;

export const Streams = {
  account: (id: string) => `account-${id}`,
  webhook: (id: string) => `webhook-${id}`,
  subscription: (id: string) => `subscription-${id}`,
  autoSubscription: (id: string) => `autosubscription-${id}`,
  component: (id: string) => `component-${id}`,
  source: (id: string) => `source-${id}`,
  inbox: (id: string) => `inbox-${id}`,
  delivery: (webhookId: string) => `delivery-${webhookId}`,
};

export interface AccountCreated { accountId: string; name: string }
export interface ApiKeyIssued { accountId: string; keyId: string; keyHash: string; prefix: string }
export interface ApiKeyRevoked { accountId: string; keyId: string }

export interface WebhookCreated {
  webhookId: string; accountId: string; url: string; name: string; description: string;
  secret: SealedSecret;
}
export interface WebhookUpdated { webhookId: string; url?: string; name?: string; description?: string; active?: boolean }
export interface WebhookSecretRotated { webhookId: string; secret: SealedSecret; previousValidUntil: number }
export interface WebhookDeleted { webhookId: string; accountId: string }

export interface SubscriptionCreated {
  subscriptionId: string; accountId: string; emitterId: string; listenerId: string; eventName: string;
}
/** Subscribes `listenerId` to `eventName` of every source the account deploys afterwards. */
export interface AutoSubscriptionCreated { autoSubscriptionId: string; accountId: string; listenerId: string; eventName: string }
export interface SubscriptionDeleted { subscriptionId: string; accountId: string; reason?: string }

/** A prop of a saved component, plain data. */
export interface PropDefinition {
  name: string;
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  default?: unknown;
  secret?: boolean;
  min?: number;
  max?: number;
  options?: unknown;
  customResponse?: boolean;
  [extra: string]: unknown;
}

export interface ComponentDefinition {
  name: string;
  key?: string;
  version: string;
  type: 'source' | 'action';
  description?: string;
  dedupe?: 'unique' | 'greatest' | 'last';
  props: PropDefinition[];
  hooks: string[];
  methods: string[];
  hasRun: boolean;
}

export interface ComponentSaved {
  componentId: string; accountId: string; code: string; codeHash: string; bundle: string;
  definition: ComponentDefinition;
}

/** `key@version` of a saved component put in the account's registry. */
export interface ComponentPublished { componentId: string; accountId: string; key: string; version: string; type: string; codeHash: string }

/** Configured prop values as stored: secret strings sealed, HTTP interface props as `{endpointKey}`. */
export type StoredProps = Record<string, unknown>;

export interface SourceConfig {
  componentId: string;
  name: string;
  nameSlug: string;
  configuredProps: StoredProps;
  active: boolean;
  /** Present when the component has an HTTP interface prop. */
  endpointKey?: string;
}

export interface SourceDeployRequested extends SourceConfig { sourceId: string; accountId: string }
export interface SourceHookRan {
  sourceId: string; hook: 'deploy' | 'activate' | 'deactivate'; ok: boolean;
  error?: { name: string; message: string }; logs: RunLog[]; durationMs: number;
}
export interface SourceDeployed { sourceId: string }
export interface SourceLifecycleFailed { sourceId: string; hook: string; error: { name: string; message: string } }
export interface SourceUpdateRequested extends SourceConfig { sourceId: string }
export interface SourceUpdated extends SourceConfig { sourceId: string }
export interface SourceDeleteRequested { sourceId: string; ignoreHookErrors: boolean }
export interface SourceDeleted { sourceId: string; accountId: string }

export interface RunLog { level: string; message: string; ts: number }

export interface SourceRunCompleted {
  sourceId: string; runId: string; trigger: 'http' | 'timer' | 'manual' | 'event';
  requestId?: string; ok: boolean; error?: { name: string; message: string; kind?: string };
  logs: RunLog[]; emitted: number; durationMs: number;
}
export interface SourceEventEmitted {
  sourceId: string; accountId: string; emitId: string; runId: string;
  /** `<ms>-<seq>`: the id event summaries are ordered by. */
  summaryId: string;
  event: unknown;
  meta: { id?: string | number; name?: string; summary?: string; ts?: number };
}
export interface SourceDbSet { sourceId: string; key: string; value: unknown }
export interface SourceEventsCleared { sourceId: string; startId?: string; endId?: string }

export interface HttpRequestReceived {
  sourceId: string; requestId: string; method: string; path: string;
  query: Record<string, unknown>; headers: Record<string, string>; bodyRaw: string; body: unknown;
}

export interface DeliveryAttemptFailed {
  deliveryId: string; webhookId: string; attempt: number; statusCode?: number; error?: string;
  durationMs: number; nextAttemptAt: number;
}
export interface DeliverySucceeded { deliveryId: string; webhookId: string; attempt: number; statusCode: number; durationMs: number }
export interface DeliveryExhausted {
  deliveryId: string; webhookId: string; attempt: number; statusCode?: number; error?: string; durationMs: number;
}
