import { APP_CATALOG, AppField, AppSpec, catalogApp, SealedOAuthClient, SecretBox } from '@app/domain';
import type { AppQueries, AppRow } from '@app/projections';

/** An app an account can connect accounts of, with its OAuth client (in clear) when it has one. */
export interface ResolvedApp {
  spec: AppSpec;
  /** The OAuth client: the operator's env for catalog apps, the sealed registration for own apps. */
  client?: { clientId: string; clientSecret: string };
  /** Set for an operator's own app: the account that registered it. */
  ownerId?: string;
}

/**
 * Which apps an account sees: the catalog shipped with the server, then the apps the account
 * registered itself (`POST /v1/apps`; never visible to other accounts, and a slug never shadows
 * a catalog app's).
 */
export class AppDirectory {
  constructor(private readonly deps: { queries: AppQueries; box: SecretBox; clients: Record<string, { clientId: string; clientSecret: string }> }) {}

  /** Every app the account sees, catalog first. */
  list(accountId: string): ResolvedApp[] {
    return [...APP_CATALOG.map((spec) => this.catalogEntry(spec)), ...this.deps.queries.apps(accountId).map((r) => this.ownEntry(r))];
  }

  /** The app with this slug as the account sees it. */
  find(accountId: string, slug: string): ResolvedApp | undefined {
    const spec = catalogApp(slug);
    if (spec) return this.catalogEntry(spec);
    const row = this.deps.queries.app(accountId, slug);
    return row ? this.ownEntry(row) : undefined;
  }

  private catalogEntry(spec: AppSpec): ResolvedApp {
    const client = spec.authType === 'oauth' ? this.deps.clients[spec.nameSlug] : undefined;
    return { spec, ...(client ? { client } : {}) };
  }

  private ownEntry(row: AppRow): ResolvedApp {
    const oauth = row.oauth ? (JSON.parse(row.oauth) as SealedOAuthClient) : undefined;
    const spec: AppSpec = {
      nameSlug: row.name_slug, name: row.name, authType: row.auth_type as AppSpec['authType'], fields: JSON.parse(row.fields) as AppField[],
      ...(oauth ? { oauth: { authorizeUrl: oauth.authorizeUrl, tokenUrl: oauth.tokenUrl, scopes: oauth.scopes } } : {}),
    };
    return {
      spec, ownerId: row.account_id,
      ...(oauth ? { client: { clientId: oauth.clientId, clientSecret: this.deps.box.open(oauth.clientSecret) } } : {}),
    };
  }
}
