import type Database from 'better-sqlite3';

/** An operator's app as stored (`fields` and `oauth` as JSON; the client secret sealed inside `oauth`). */
export interface AppRow {
  account_id: string; name_slug: string; name: string; auth_type: string; fields: string; oauth: string | null; created_at: number; pos: number;
}

/** A connected account as stored; `credentials` is a sealed secret as JSON, never clear text. */
export interface ConnectedAccountRow {
  id: string; account_id: string; app: string; name: string; credentials: string; expires_at: number | null; refresh_at: number | null;
  refreshable: number; healthy: number; last_error: string | null; created_at: number; updated_at: number; pos: number;
}

/** Read-only queries over the apps and connected-accounts read models. */
export class AppQueries {
  private readonly s: Record<string, Database.Statement>;

  constructor(db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      app: p('SELECT * FROM rm_apps WHERE account_id = ? AND name_slug = ?'),
      apps: p('SELECT * FROM rm_apps WHERE account_id = ? ORDER BY name_slug'),
      account: p('SELECT * FROM rm_connected_accounts WHERE id = ?'),
      accounts: p('SELECT * FROM rm_connected_accounts WHERE account_id = ? ORDER BY pos'),
      accountsOfApp: p('SELECT * FROM rm_connected_accounts WHERE account_id = ? AND app = ? ORDER BY pos'),
      appCount: p('SELECT count(*) AS n FROM rm_apps WHERE account_id = ?'),
      accountCount: p('SELECT count(*) AS n FROM rm_connected_accounts WHERE account_id = ?'),
      due: p('SELECT * FROM rm_connected_accounts WHERE refreshable = 1 AND healthy = 1 AND refresh_at <= ? ORDER BY refresh_at LIMIT ?'),
      nextDue: p('SELECT min(refresh_at) AS at FROM rm_connected_accounts WHERE refreshable = 1 AND healthy = 1'),
    };
  }

  /** An app an account registered. */
  app(accountId: string, slug: string): AppRow | undefined {
    return this.s.app.get(accountId, slug) as AppRow | undefined;
  }

  /** The apps an account registered, by slug. */
  apps(accountId: string): AppRow[] {
    return this.s.apps.all(accountId) as AppRow[];
  }

  /** A connected account by id, whoever owns it (callers apply the ownership rule). */
  connectedAccount(id: string): ConnectedAccountRow | undefined {
    return this.s.account.get(id) as ConnectedAccountRow | undefined;
  }

  /** An account's connected accounts, oldest first, optionally of one app. */
  connectedAccounts(accountId: string, app?: string): ConnectedAccountRow[] {
    return (app === undefined ? this.s.accounts.all(accountId) : this.s.accountsOfApp.all(accountId, app)) as ConnectedAccountRow[];
  }

  /** How many apps an account registered. */
  appCount(accountId: string): number {
    return (this.s.appCount.get(accountId) as { n: number }).n;
  }

  /** How many connected accounts an account has. */
  connectedAccountCount(accountId: string): number {
    return (this.s.accountCount.get(accountId) as { n: number }).n;
  }

  /** Healthy, refreshable accounts whose refresh time has come (the background refresher's work). */
  dueForRefresh(now: number, limit: number): ConnectedAccountRow[] {
    return this.s.due.all(now, limit) as ConnectedAccountRow[];
  }

  /** The earliest refresh time (epoch ms) of a healthy, refreshable account; undefined when there is none. */
  nextRefreshAt(): number | undefined {
    return (this.s.nextDue.get() as { at: number | null }).at ?? undefined;
  }
}
