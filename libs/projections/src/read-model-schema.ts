/** Bumped whenever the schema below changes: a store with another version rebuilds its read models from the log at start. */
export const READ_MODEL_VERSION = 4;

/** Tables of the read models. All of them are projections: dropping and replaying the log rebuilds them. */
export const READ_MODEL_TABLES = [
  'rm_accounts', 'rm_api_keys', 'rm_webhooks', 'rm_subscriptions', 'rm_components', 'rm_sources',
  'rm_source_events', 'rm_source_logs', 'rm_deliveries', 'rm_pending_requests', 'rm_auto_subscriptions', 'rm_registry',
];

export const READ_MODEL_SCHEMA = `
CREATE TABLE IF NOT EXISTS rm_accounts (id TEXT PRIMARY KEY, name TEXT, created_at INTEGER, pos INTEGER);
CREATE TABLE IF NOT EXISTS rm_api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT, account_id TEXT, prefix TEXT, revoked INTEGER DEFAULT 0, created_at INTEGER);
CREATE TABLE IF NOT EXISTS rm_webhooks (
  id TEXT PRIMARY KEY, account_id TEXT, url TEXT, name TEXT, description TEXT, active INTEGER,
  secret TEXT, prev_secret TEXT, prev_valid_until INTEGER, created_at INTEGER, updated_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_webhooks_account ON rm_webhooks(account_id, pos);
CREATE TABLE IF NOT EXISTS rm_subscriptions (
  id TEXT PRIMARY KEY, account_id TEXT, emitter_id TEXT, listener_id TEXT, event_name TEXT, created_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_subscriptions_emitter ON rm_subscriptions(emitter_id, event_name);
CREATE INDEX IF NOT EXISTS rm_subscriptions_listener ON rm_subscriptions(listener_id);
CREATE INDEX IF NOT EXISTS rm_subscriptions_account ON rm_subscriptions(account_id, pos);
CREATE TABLE IF NOT EXISTS rm_components (
  id TEXT PRIMARY KEY, account_id TEXT, key TEXT, name TEXT, version TEXT, type TEXT, description TEXT,
  code TEXT, code_hash TEXT, definition TEXT, bundle TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_components_key ON rm_components(account_id, key);
CREATE TABLE IF NOT EXISTS rm_sources (
  id TEXT PRIMARY KEY, account_id TEXT, component_id TEXT, name TEXT, name_slug TEXT, configured_props TEXT,
  active INTEGER, endpoint_key TEXT, status TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER,
  last_activated_at INTEGER, last_timer_at INTEGER, failing INTEGER DEFAULT 0, last_error TEXT);
CREATE INDEX IF NOT EXISTS rm_sources_account ON rm_sources(account_id, pos);
CREATE INDEX IF NOT EXISTS rm_sources_endpoint ON rm_sources(endpoint_key);
CREATE INDEX IF NOT EXISTS rm_sources_slug ON rm_sources(account_id, name_slug);
CREATE TABLE IF NOT EXISTS rm_source_events (
  source_id TEXT, summary_id TEXT, ms INTEGER, seq INTEGER, channel TEXT, emit_id TEXT, event TEXT, meta TEXT,
  PRIMARY KEY (source_id, ms, seq));
CREATE INDEX IF NOT EXISTS rm_source_events_channel ON rm_source_events(source_id, channel, ms, seq);
CREATE TABLE IF NOT EXISTS rm_source_logs (source_id TEXT, pos INTEGER, kind TEXT, data TEXT, at INTEGER, PRIMARY KEY (source_id, pos));
CREATE TABLE IF NOT EXISTS rm_deliveries (
  id TEXT PRIMARY KEY, webhook_id TEXT, account_id TEXT, emit_id TEXT, emitter_id TEXT, event_name TEXT,
  body TEXT, status TEXT, attempts TEXT, next_attempt_at INTEGER, created_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_deliveries_webhook ON rm_deliveries(webhook_id, pos);
CREATE INDEX IF NOT EXISTS rm_deliveries_due ON rm_deliveries(status, next_attempt_at);
CREATE TABLE IF NOT EXISTS rm_pending_requests (request_id TEXT PRIMARY KEY, source_id TEXT, pos INTEGER);
CREATE TABLE IF NOT EXISTS rm_auto_subscriptions (id TEXT PRIMARY KEY, account_id TEXT, listener_id TEXT, event_name TEXT, created_at INTEGER, pos INTEGER);
CREATE TABLE IF NOT EXISTS rm_registry (account_id TEXT, key TEXT, version TEXT, type TEXT, component_id TEXT, code_hash TEXT, pos INTEGER, PRIMARY KEY (account_id, key, version));
CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL);
`;
