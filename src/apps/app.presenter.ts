import type { ResolvedApp } from '@app/engine';
import type { ConnectedAccountRow } from '@app/projections';

/** An app as the API returns it; an OAuth client's secret is never part of it. */
export function presentApp(app: ResolvedApp): Record<string, unknown> {
  const { spec } = app;
  return {
    name_slug: spec.nameSlug,
    name: spec.name,
    auth_type: spec.authType,
    fields: spec.fields.map((f) => ({ name: f.name, label: f.label, secret: f.secret, ...(f.optional ? { optional: true } : {}) })),
    ...(spec.oauth ? {
      oauth: { authorize_url: spec.oauth.authorizeUrl, token_url: spec.oauth.tokenUrl, scopes: spec.oauth.scopes, client_configured: app.client !== undefined },
    } : {}),
    custom: app.ownerId !== undefined,
  };
}

/**
 * A connected account as the API returns it: never its credentials. `healthy` is false after
 * the provider refused a token refresh (`error` says why) until the account gets new credentials.
 */
export function presentConnectedAccount(row: ConnectedAccountRow): Record<string, unknown> {
  return {
    id: row.id,
    app: row.app,
    name: row.name,
    created_at: row.created_at,
    updated_at: row.updated_at,
    healthy: row.healthy === 1,
    ...(row.healthy === 1 ? {} : { error: row.last_error }),
    ...(row.expires_at !== null ? { expires_at: Math.floor(row.expires_at / 1000) } : {}),
  };
}
