import type { EgressPolicy } from '@app/delivery';
import { EventTypes, isAuthProvisionRef, SealedSecret, SecretBox, Streams, TokenTimes } from '@app/domain';
import type { NewSluiceEvent } from '@app/domain';
import { WrongExpectedRevisionError } from '@app/event-store';
import type { AppQueries, ConnectedAccountRow } from '@app/projections';
import type { AppDirectory } from './app-directory';
import { OAuthTokenError, requestTokens } from './oauth-client';

/** An access token is renewed at most this long before it expires (a quarter of its lifetime when that is shorter). */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;
/** Accounts renewed per sweep of the background refresher; the rest wait for the next sweep. */
const REFRESHES_PER_SWEEP = 50;
/** setTimeout cannot wait longer than 2^31-1 ms; a later renewal is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Credentials as the guest's `$auth` holds them: field name to value. */
export type Credentials = Record<string, string>;

/** When a token granted now with this lifetime expires and is due for renewal. */
export function tokenTimes(tokens: { expiresIn?: number; refreshToken?: string }, now: number): TokenTimes {
  const refreshable = typeof tokens.refreshToken === 'string' && tokens.refreshToken !== '';
  if (tokens.expiresIn === undefined) return { refreshable };
  const lifetime = Math.round(tokens.expiresIn * 1000);
  const expiresAt = now + lifetime;
  return { expiresAt, refreshAt: expiresAt - Math.min(REFRESH_MARGIN_MS, Math.floor(lifetime / 4)), refreshable };
}

/** What the runtime needs to read, renew and record connected accounts. */
export interface ConnectedAccountAuthDeps {
  queries: AppQueries;
  box: SecretBox;
  apps: AppDirectory;
  /** Appends with the expected revision and waits until the read models show it. */
  append(stream: string, events: NewSluiceEvent[], expectedRevision: bigint): Promise<void>;
  /** The current revision of a stream. */
  revision(stream: string): Promise<bigint>;
  /** Waits until the read models include every append so far. */
  settle(): Promise<void>;
  egress: EgressPolicy;
  timeoutMs: number;
  /** How long a renewal still due after a sweep (the provider failed without refusing) waits for the next one (ms). */
  sweepMs: number;
}

/**
 * Turns app props' `{authProvisionId}` into credentials for a run, and keeps OAuth tokens fresh.
 *
 * - Renewals are single-flight per connected account: concurrent runs and the background sweep
 *   share one request to the provider, so a provider that rotates refresh tokens never sees the
 *   old one twice.
 * - A renewal is recorded with the stream's expected revision: if the user rotated or deleted
 *   the account meanwhile, their change stands and the renewal is dropped.
 * - Only a refusal of the grant itself (`invalid_grant`, ...) marks the account unhealthy (an
 *   event); a network failure or a 5xx records nothing and is tried again later.
 */
export class ConnectedAccountAuth {
  private readonly inFlight = new Map<string, Promise<ConnectedAccountRow | undefined>>();
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  private started = false;

  constructor(private readonly deps: ConnectedAccountAuthDeps) {}

  /** Seals credentials for an event (one authenticated blob: field names are secret too). */
  seal(credentials: Credentials): SealedSecret {
    return this.deps.box.seal(JSON.stringify(credentials));
  }

  /** The credentials of a stored connected account, in clear. */
  credentialsOf(row: ConnectedAccountRow): Credentials {
    return JSON.parse(this.deps.box.open(JSON.parse(row.credentials) as SealedSecret)) as Credentials;
  }

  /**
   * The props a run sees: each app prop in `appProps` whose value is `{authProvisionId}` becomes
   * `{ $auth: credentials }`. Gives the reason instead when an account is gone or unusable; the
   * message names the prop and the account and never holds a credential.
   */
  async resolve(accountId: string | undefined, props: Record<string, unknown>, appProps: readonly string[]): Promise<{ props: Record<string, unknown> } | { error: string }> {
    let out = props;
    for (const name of appProps) {
      const v = props[name];
      if (!isAuthProvisionRef(v)) continue;
      const auth = await this.authFor(accountId, name, v.authProvisionId);
      if ('error' in auth) return auth;
      if (out === props) out = { ...props };
      out[name] = { $auth: auth.credentials };
    }
    return { props: out };
  }

  /**
   * One account's credentials for a run. A token due for renewal is renewed first. An unhealthy
   * account (its refresh was refused) still runs while its access token has not expired: the
   * provider may still accept it, and failing earlier would stop work that can succeed. Once the
   * token has expired, the run fails at once with an error naming the account, instead of
   * calling the provider with a dead token (which would surface as an opaque 401 inside the
   * component) or retrying a refusal that only the user can fix by reconnecting.
   */
  private async authFor(accountId: string | undefined, prop: string, id: string): Promise<{ credentials: Credentials } | { error: string }> {
    const gone = { error: `prop "${prop}": connected account ${id} not found (it was deleted, or belongs to another account); connect an account and update the component's configured props` };
    let row = this.deps.queries.connectedAccount(id);
    if (!row || row.account_id !== accountId) return gone;
    const now = Date.now();
    let refreshFailure: string | undefined;
    if (row.refreshable === 1 && row.healthy === 1 && row.refresh_at !== null && row.refresh_at <= now) {
      try {
        row = await this.refresh(id);
      } catch (err) {
        refreshFailure = (err as Error).message;
        row = this.deps.queries.connectedAccount(id);
      }
      if (!row) return gone;
    }
    if (row.expires_at !== null && row.expires_at <= Date.now()) {
      const why = row.healthy === 0 ? `its token refresh was refused (${row.last_error ?? 'unknown error'}); reconnect it`
        : row.refreshable === 0 ? 'it has no refresh token; give it new credentials'
          : `its token could not be refreshed (${refreshFailure ?? 'unknown error'}); the refresh is tried again on the next run`;
      return { error: `prop "${prop}": the access token of connected account ${id} (${row.app}) has expired and ${why}` };
    }
    return { credentials: this.credentialsOf(row) };
  }

  /** Renews an account's access token now (single-flight per account); the row after it, undefined if the account is gone. */
  refresh(id: string): Promise<ConnectedAccountRow | undefined> {
    let p = this.inFlight.get(id);
    if (!p) {
      p = this.renew(id).finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, p);
    }
    return p;
  }

  private async renew(id: string): Promise<ConnectedAccountRow | undefined> {
    const stream = Streams.connectedAccount(id);
    await this.deps.settle();
    const revision = await this.deps.revision(stream);
    const row = this.deps.queries.connectedAccount(id);
    if (!row || row.refreshable !== 1 || row.healthy !== 1) return row;
    const app = this.deps.apps.find(row.account_id, row.app);
    if (!app?.spec.oauth || !app.client) throw new OAuthTokenError(`app ${row.app} has no OAuth client configured`, false);
    const credentials = this.credentialsOf(row);
    let granted;
    try {
      granted = await requestTokens(app.spec.oauth.tokenUrl, {
        grant_type: 'refresh_token', refresh_token: credentials.oauth_refresh_token, client_id: app.client.clientId, client_secret: app.client.clientSecret,
      }, { egress: this.deps.egress, timeoutMs: this.deps.timeoutMs });
    } catch (err) {
      if (err instanceof OAuthTokenError && err.permanent) {
        await this.record(stream, revision, { type: EventTypes.connectedAccountRefreshFailed, data: { connectedAccountId: id, error: err.message }, metadata: { actor: 'system' } });
        return this.deps.queries.connectedAccount(id);
      }
      throw err;
    }
    const next: Credentials = {
      ...credentials, oauth_access_token: granted.accessToken, ...(granted.refreshToken ? { oauth_refresh_token: granted.refreshToken } : {}),
    };
    await this.record(stream, revision, {
      type: EventTypes.connectedAccountTokensRefreshed,
      data: { connectedAccountId: id, credentials: this.seal(next), ...tokenTimes({ expiresIn: granted.expiresIn, refreshToken: next.oauth_refresh_token }, Date.now()) },
      metadata: { actor: 'system' },
    });
    return this.deps.queries.connectedAccount(id);
  }

  /** Appends unless the account changed since `revision` (a rotation or deletion wins over a renewal). */
  private async record(stream: string, revision: bigint, e: NewSluiceEvent): Promise<void> {
    try {
      await this.deps.append(stream, [e], revision);
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }

  /**
   * Starts the background refresher. It has one timer, at the earliest renewal due among healthy,
   * refreshable accounts, and none while no account needs one: an idle server is not woken to
   * find nothing due (it used to sweep every `sweepMs`, 30 s by default).
   */
  start(): void {
    this.started = true;
    this.reschedule();
  }

  /**
   * Arms the refresher's timer for the earliest renewal due. Called at start, after each sweep,
   * and by the runtime after each commit that changed a connected account (a new one, rotated
   * credentials, renewed tokens, a refused renewal, a deletion). A renewal still due right after
   * a sweep (a network error or a 5xx, which record nothing) is tried again `sweepMs` later.
   */
  reschedule(afterSweep = false): void {
    // A sweep in progress reschedules when it ends.
    if (!this.started || this.sweeping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const next = this.deps.queries.nextRefreshAt();
    if (next === undefined) return;
    const now = Date.now();
    const delay = next > now ? next - now : afterSweep ? this.deps.sweepMs : 0;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.started) return;
      this.sweeping = this.sweep().catch((err: Error) => console.error(`the OAuth renewal sweep failed: ${err.message}`)).finally(() => {
        this.sweeping = undefined;
        this.reschedule(true);
      });
    }, Math.min(delay, MAX_TIMER_MS));
    this.timer.unref();
  }

  /** True while the refresher's timer is armed (for tests). */
  get scheduled(): boolean {
    return this.timer !== undefined;
  }

  /** Stops the refresher and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  private async sweep(): Promise<void> {
    for (const row of this.deps.queries.dueForRefresh(Date.now(), REFRESHES_PER_SWEEP)) {
      // A failure here is retried on the next sweep (or at the next run); it must not stop the others.
      await this.refresh(row.id).catch((err: Error) => console.error(`refreshing connected account ${row.id} failed: ${err.message}`));
    }
  }
}
