import type { EventMetadata, LogEvent, NewEvent, StoredEvent } from '@app/event-store';
import type {
  AppRegistered, ConnectedAccountCreated, ConnectedAccountCredentialsRotated, ConnectedAccountDeleted, ConnectedAccountRefreshFailed,
  ConnectedAccountTokensRefreshed,
} from './app-events';
import type { SealedSecret } from './secret-box';
import type {
  WorkflowDeleted, WorkflowRunFinished, WorkflowRunStarted, WorkflowSaved, WorkflowSendPerformed, WorkflowStepCompleted,
} from './workflow-events';

/**
 * Event type names. Type strings are stable and versioned; never rename one, add a `.v2`
 * instead. Every value is a member of {@link SluiceEvent}, and every member has a name here
 * (both checked below).
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
  componentUnpublished: 'component.unpublished.v1',
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
  workflowEventEmitted: 'workflow.event_emitted.v1',
  workflowCreated: 'workflow.created.v1',
  workflowUpdated: 'workflow.updated.v1',
  workflowDeleted: 'workflow.deleted.v1',
  workflowRunStarted: 'workflow.run_started.v1',
  workflowStepCompleted: 'workflow.step_completed.v1',
  workflowSendPerformed: 'workflow.send_performed.v1',
  workflowRunFinished: 'workflow.run_finished.v1',
  listenerDispatched: 'listener.dispatched.v1',
  deliveryAttemptFailed: 'delivery.attempt_failed.v1',
  deliverySucceeded: 'delivery.delivered.v1',
  deliveryExhausted: 'delivery.exhausted.v1',
  deliveryRetryRequested: 'delivery.retry_requested.v1',
  appRegistered: 'app.registered.v1',
  connectedAccountCreated: 'connected_account.created.v1',
  connectedAccountCredentialsRotated: 'connected_account.credentials_rotated.v1',
  connectedAccountTokensRefreshed: 'connected_account.tokens_refreshed.v1',
  connectedAccountRefreshFailed: 'connected_account.refresh_failed.v1',
  connectedAccountDeleted: 'connected_account.deleted.v1',
} as const satisfies Record<string, EventType>;

/**
 * Every event Sluice records: one member per type string, with its payload. Adding an event
 * type is one member here (plus its name in {@link EventTypes} and its stream in
 * {@link EventStreamKinds}); the compiler then names every evolve, decide and projection that
 * has to consider it.
 */
export type SluiceEvent =
  | { type: 'account.created.v1'; data: AccountCreated }
  | { type: 'account.api_key_issued.v1'; data: ApiKeyIssued }
  | { type: 'account.api_key_revoked.v1'; data: ApiKeyRevoked }
  | { type: 'webhook.created.v1'; data: WebhookCreated }
  | { type: 'webhook.updated.v1'; data: WebhookUpdated }
  | { type: 'webhook.secret_rotated.v1'; data: WebhookSecretRotated }
  | { type: 'webhook.deleted.v1'; data: WebhookDeleted }
  | { type: 'subscription.created.v1'; data: SubscriptionCreated }
  | { type: 'subscription.deleted.v1'; data: SubscriptionDeleted }
  | { type: 'auto_subscription.created.v1'; data: AutoSubscriptionCreated }
  | { type: 'component.saved.v1'; data: ComponentSaved }
  | { type: 'component.published.v1'; data: ComponentPublished }
  | { type: 'component.unpublished.v1'; data: ComponentUnpublished }
  | { type: 'source.deploy_requested.v1'; data: SourceDeployRequested }
  | { type: 'source.hook_ran.v1'; data: SourceHookRan }
  | { type: 'source.deployed.v1'; data: SourceDeployed }
  | { type: 'source.deploy_failed.v1'; data: SourceLifecycleFailed }
  | { type: 'source.update_requested.v1'; data: SourceUpdateRequested }
  | { type: 'source.updated.v1'; data: SourceUpdated }
  | { type: 'source.update_failed.v1'; data: SourceLifecycleFailed }
  | { type: 'source.delete_requested.v1'; data: SourceDeleteRequested }
  | { type: 'source.deleted.v1'; data: SourceDeleted }
  | { type: 'source.delete_failed.v1'; data: SourceLifecycleFailed }
  | { type: 'source.run_completed.v1'; data: SourceRunCompleted }
  | { type: 'source.event_emitted.v1'; data: SourceEventEmitted }
  | { type: 'source.db_set.v1'; data: SourceDbSet }
  | { type: 'source.events_cleared.v1'; data: SourceEventsCleared }
  | { type: 'source.http_request_received.v1'; data: HttpRequestReceived }
  | { type: 'delivery.attempt_failed.v1'; data: DeliveryAttemptFailed }
  | { type: 'delivery.delivered.v1'; data: DeliverySucceeded }
  | { type: 'delivery.exhausted.v1'; data: DeliveryExhausted }
  | { type: 'delivery.retry_requested.v1'; data: DeliveryRetryRequested }
  | { type: 'workflow.event_emitted.v1'; data: WorkflowEventEmitted }
  | { type: 'workflow.created.v1'; data: WorkflowSaved }
  | { type: 'workflow.updated.v1'; data: WorkflowSaved }
  | { type: 'workflow.deleted.v1'; data: WorkflowDeleted }
  | { type: 'workflow.run_started.v1'; data: WorkflowRunStarted }
  | { type: 'workflow.step_completed.v1'; data: WorkflowStepCompleted }
  | { type: 'workflow.send_performed.v1'; data: WorkflowSendPerformed }
  | { type: 'workflow.run_finished.v1'; data: WorkflowRunFinished }
  | { type: 'listener.dispatched.v1'; data: ListenerDispatched }
  | { type: 'app.registered.v1'; data: AppRegistered }
  | { type: 'connected_account.created.v1'; data: ConnectedAccountCreated }
  | { type: 'connected_account.credentials_rotated.v1'; data: ConnectedAccountCredentialsRotated }
  | { type: 'connected_account.tokens_refreshed.v1'; data: ConnectedAccountTokensRefreshed }
  | { type: 'connected_account.refresh_failed.v1'; data: ConnectedAccountRefreshFailed }
  | { type: 'connected_account.deleted.v1'; data: ConnectedAccountDeleted };

/** A type string of {@link SluiceEvent}. */
export type EventType = SluiceEvent['type'];

/** The member of {@link SluiceEvent} with type `T` (a union when `T` is one). */
export type EventOf<T extends EventType> = Extract<SluiceEvent, { type: T }>;

/** The payload of events of type `T`. */
export type EventData<T extends EventType> = EventOf<T>['data'];

/** A Sluice event to append: its data type follows its type string. */
export type NewSluiceEvent<T extends EventType = EventType> = NewEvent<EventOf<T>>;

/** A Sluice event read back from the store, narrowed by {@link asSluiceEvent}. */
export type StoredSluiceEvent<T extends EventType = EventType> = StoredEvent<EventOf<T>>;

/** A Sluice event as a fold of the whole log reads it (no id, stream or revision). */
export type LogSluiceEvent<T extends EventType = EventType> = LogEvent<EventOf<T>>;

/** Fails to compile when a member of {@link SluiceEvent} has no name in {@link EventTypes}. */
type Unnamed = Exclude<EventType, (typeof EventTypes)[keyof typeof EventTypes]>;
const everyEventTypeIsNamed: [Unnamed] extends [never] ? true : { unnamed: Unnamed } = true;
void everyEventTypeIsNamed;

/** The kind of stream an event type is appended to (see {@link Streams}). */
export type StreamKind = keyof typeof Streams;

/**
 * The stream kind of every event type: a new member of {@link SluiceEvent} must say where it
 * lives, and {@link SourceStreamEvent} (what the source's evolve and decide consider) follows.
 */
export const EventStreamKinds = {
  'account.created.v1': 'account',
  'account.api_key_issued.v1': 'account',
  'account.api_key_revoked.v1': 'account',
  'webhook.created.v1': 'webhook',
  'webhook.updated.v1': 'webhook',
  'webhook.secret_rotated.v1': 'webhook',
  'webhook.deleted.v1': 'webhook',
  'subscription.created.v1': 'subscription',
  'subscription.deleted.v1': 'subscription',
  'auto_subscription.created.v1': 'autoSubscription',
  'component.saved.v1': 'component',
  'component.published.v1': 'component',
  'component.unpublished.v1': 'component',
  'source.deploy_requested.v1': 'source',
  'source.hook_ran.v1': 'source',
  'source.deployed.v1': 'source',
  'source.deploy_failed.v1': 'source',
  'source.update_requested.v1': 'source',
  'source.updated.v1': 'source',
  'source.update_failed.v1': 'source',
  'source.delete_requested.v1': 'source',
  'source.deleted.v1': 'source',
  'source.delete_failed.v1': 'source',
  'source.run_completed.v1': 'source',
  'source.event_emitted.v1': 'source',
  'source.db_set.v1': 'source',
  'source.events_cleared.v1': 'source',
  'source.http_request_received.v1': 'inbox',
  'workflow.event_emitted.v1': 'workflowRun',
  'workflow.created.v1': 'workflow',
  'workflow.updated.v1': 'workflow',
  'workflow.deleted.v1': 'workflow',
  'workflow.run_started.v1': 'workflowRun',
  'workflow.step_completed.v1': 'workflowRun',
  'workflow.send_performed.v1': 'workflowRun',
  'workflow.run_finished.v1': 'workflowRun',
  'listener.dispatched.v1': 'listener',
  'delivery.attempt_failed.v1': 'delivery',
  'delivery.delivered.v1': 'delivery',
  'delivery.exhausted.v1': 'delivery',
  'delivery.retry_requested.v1': 'delivery',
  'app.registered.v1': 'app',
  'connected_account.created.v1': 'connectedAccount',
  'connected_account.credentials_rotated.v1': 'connectedAccount',
  'connected_account.tokens_refreshed.v1': 'connectedAccount',
  'connected_account.refresh_failed.v1': 'connectedAccount',
  'connected_account.deleted.v1': 'connectedAccount',
} as const satisfies Record<EventType, StreamKind>;

/** Type strings of the events of a `source-<dc>` stream. */
export type SourceStreamEventType = {
  [T in EventType]: (typeof EventStreamKinds)[T] extends 'source' ? T : never;
}[EventType];

/** An event of a `source-<dc>` stream: what the source's evolve folds and its decide produces. */
export type SourceStreamEvent = EventOf<SourceStreamEventType>;

/**
 * A new event whose data type follows its type string:
 * `event(EventTypes.webhookDeleted, { webhookId, accountId }, { actor })`.
 */
export function event<T extends EventType>(type: T, data: EventData<T>, metadata?: Partial<EventMetadata>, id?: string): NewSluiceEvent<T> {
  const e = { type, data } as NewSluiceEvent<T>;
  if (metadata !== undefined) e.metadata = metadata;
  if (id !== undefined) e.id = id;
  return e;
}

/** Whether a type string is one this build knows. */
export function isEventType(type: string): type is EventType {
  return Object.prototype.hasOwnProperty.call(EventStreamKinds, type);
}

/**
 * The one place a stored event becomes a typed {@link SluiceEvent}: by its type string, with
 * the payload trusted as written (every append of this code base is typed). Types this build
 * does not know (a newer writer, a test) give `undefined`, and consumers skip them.
 */
export function asSluiceEvent(e: StoredEvent): StoredSluiceEvent | undefined {
  return isEventType(e.type) ? (e as StoredSluiceEvent) : undefined;
}

/** An event of a `source-<dc>` stream, or `undefined` for any other (or unknown) type. */
export function asSourceStreamEvent<E extends StoredEvent | NewEvent>(e: E): (E & SourceStreamEvent) | undefined {
  return isEventType(e.type) && EventStreamKinds[e.type] === 'source' ? (e as E & SourceStreamEvent) : undefined;
}

/** For the `default` of a switch that must consider every member: fails to compile when one is missed. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** Streams: `account-<u>`, `webhook-<wh>`, `subscription-<sub>`, `component-<sc>`, `source-<dc>`, `inbox-<dc>` (HTTP requests), `delivery-<wh>`. */
export const Streams = {
  account: (id: string) => `account-${id}`,
  webhook: (id: string) => `webhook-${id}`,
  subscription: (id: string) => `subscription-${id}`,
  autoSubscription: (id: string) => `autosubscription-${id}`,
  component: (id: string) => `component-${id}`,
  source: (id: string) => `source-${id}`,
  inbox: (id: string) => `inbox-${id}`,
  delivery: (webhookId: string) => `delivery-${webhookId}`,
  /** A workflow's definition: created, updated, deleted. */
  workflow: (id: string) => `workflow-${id}`,
  /** One workflow run: its start, each step's outcome and sends, its end (issue 8). */
  workflowRun: (runId: string) => `workflowrun-${runId}`,
  /** Dispatches of emits to one workflow listener (`p_...`) that are settled without a source run. */
  listener: (listenerId: string) => `listener-${listenerId}`,
  /** An operator's own app (`POST /v1/apps`), per owning account and slug: a second registration is a conflict. */
  app: (accountId: string, slug: string) => `app-${accountId}.${slug}`,
  /** One connected account (`apn_...`): created, credentials rotated, tokens refreshed, refresh failed, deleted. */
  connectedAccount: (id: string) => `connectedaccount-${id}`,
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
  /** The definition has `additionalProps` (dynamic props): deploys and updates run it to validate the configured props. */
  hasAdditionalProps?: boolean;
}

export interface ComponentSaved {
  componentId: string; accountId: string; code: string; codeHash: string; bundle: string;
  definition: ComponentDefinition;
}

/** `key@version` of a saved component put in the account's registry. */
export interface ComponentPublished { componentId: string; accountId: string; key: string; version: string; type: string; codeHash: string }
/** `key@version` left the account's registry; what was deployed from it keeps its saved component. */
export interface ComponentUnpublished { componentId: string; accountId: string; key: string; version: string }

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
  /** Present when the hook emitted: the emits' `runId` and how many were recorded (after dedupe). */
  runId?: string; emitted?: number;
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
  /** Listener hops that led to this run ({@link SourceEventEmitted.hops}); absent: 0. */
  hops?: number;
}
export interface SourceEventEmitted {
  sourceId: string; accountId: string; emitId: string; runId: string;
  /** `<ms>-<seq>`: the id event summaries are ordered by. */
  summaryId: string;
  event: unknown;
  meta: { id?: string | number; name?: string; summary?: string; ts?: number };
  /**
   * How many listener hops led to the run that emitted this: 0 (absent) for a run started by
   * HTTP, a timer or by hand, n+1 for a run of a listener that heard an emit with n hops. Emits
   * at the cap (`MAX_LISTENER_HOPS`) are not dispatched to listeners, so a cycle ends.
   */
  hops?: number;
  /**
   * How the deliveries of this emit to webhooks and its dispatches to listeners are named (the
   * read models derive them, on every fold and rebuild alike): `'ordered'` (every emit recorded
   * since it existed), each id starts with the emit id's 48-bit timestamp, so those of one commit
   * share the last pages of their index; absent (older records), uuidv5 of emit and webhook or
   * listener, random. The outcomes in the log name deliveries and dispatches by these ids, so a
   * rebuild must derive each the way its emit was recorded.
   */
  deliveryIds?: 'ordered';
}
export interface SourceDbSet { sourceId: string; key: string; value: unknown }
export interface SourceEventsCleared { sourceId: string; startId?: string; endId?: string }

export interface HttpRequestReceived {
  sourceId: string; requestId: string; method: string; path: string;
  /** The full public URL of the request; absent in records written before it existed. */
  url?: string;
  query: Record<string, unknown>; headers: Record<string, string>; bodyRaw: string;
  /** The body as the run got it; absent when `bodyFromRaw`. */
  body?: unknown;
  /**
   * The body is `jsonRequestBody(bodyRaw)` (`@app/sandbox`), not written twice: since issue 10's
   * stop 56 for JSON bodies whose text parsed as is, since stop 57 for every request with a JSON
   * content type (the raw text itself when it is not JSON).
   */
  bodyFromRaw?: true;
}

export interface DeliveryAttemptFailed {
  deliveryId: string; webhookId: string; attempt: number; statusCode?: number; error?: string;
  durationMs: number; nextAttemptAt: number;
}
export interface DeliverySucceeded { deliveryId: string; webhookId: string; attempt: number; statusCode: number; durationMs: number }
export interface DeliveryExhausted {
  deliveryId: string; webhookId: string; attempt: number; statusCode?: number; error?: string; durationMs: number;
}
/** An operator asked for a failed or exhausted delivery to be attempted again. */
export interface DeliveryRetryRequested { deliveryId: string; webhookId: string }

/**
 * A workflow run emitted an event: `$.send.emit({raw_event, name})` of a step (channel `name`,
 * default `''`), or the run's failure on the `$errors` channel. Subscriptions with emitter
 * `p_<id>` (or `p_*` for every workflow of the account) hear it like a source's emit.
 */
export interface WorkflowEventEmitted {
  workflowId: string; accountId: string; runId: string;
  /** Unique per emit (deliveries and listener runs are keyed by it). */
  emitId: string;
  event: unknown;
  meta: { name?: string; summary?: string; ts?: number };
  /** Listener hops that led to this run ({@link SourceEventEmitted.hops}); absent: 0. */
  hops?: number;
  /**
   * Its deliveries' and dispatches' ids sort with `emitId` ({@link SourceEventEmitted.deliveryIds}):
   * recorded on emits whose id starts with the run's trigger time (`WorkflowRunner.emitIdOf`); absent
   * on emits recorded before, whose ids are uuidv5 (random), and whose deliveries keep theirs.
   */
  deliveryIds?: 'ordered';
}

/** The cap on listener hops carried by an emit: an emit with this many hops reaches webhooks only. */
export const MAX_LISTENER_HOPS = 8;

/**
 * An emit's dispatch to a listener that no source run records: a workflow listener was started
 * (`started`, idempotent per emit), or the dispatch was dropped (`skipped`: the listener is
 * inactive or gone). A source listener's dispatch is settled by its `source.run_completed.v1`
 * instead (its `requestId` is the dispatch id).
 */
export interface ListenerDispatched {
  dispatchId: string; listenerId: string; emitId: string; outcome: 'started' | 'skipped'; reason?: string;
}
