import { AppRegistrationInput, AppSpec, checkAppRegistration, CheckedAppRegistration, checkCredentials, EventTypes, newId, Streams, TokenTimes } from '@app/domain';
import type { ResolvedApp } from '../app-directory';
import { Credentials, tokenTimes } from '../connected-account-auth';
import { ConflictError, InvalidFieldsError, NotFoundError, UpstreamError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';
import { OAuthTokenError, requestTokens } from '../oauth-client';
import { OAUTH_STATE_TTL_MS, openOAuthState, sealOAuthState } from '../oauth-state';

/** `POST /v1/accounts`: an account of an app from credentials the user has. */
export interface ConnectAccount {
  app: string;
  name: string;
  credentials: unknown;
}

/** `GET /v1/oauth/callback`: what the provider sent back. */
export interface OAuthCallback {
  code?: string;
  state?: string;
  /** Set when the user declined or the provider failed (RFC 6749 4.1.2.1). */
  error?: string;
}

/** Apps one account may register: an operator's own integrations, not a registry. */
export const MAX_APPS_PER_ACCOUNT = 100;
/** Connected accounts one account may hold (each is sealed state the server keeps and renews). */
export const MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT = 1000;

/** The path of the OAuth redirect URI under the public URL. */
export const OAUTH_CALLBACK_PATH = '/v1/oauth/callback';

/**
 * Apps (the catalog plus operators' own) and connected accounts (`apn_...`): created from typed
 * credentials or an OAuth grant, given new credentials, deleted. Credentials are checked against
 * the app's fields and sealed in the event; nothing here returns them.
 */
export class AppUseCases {
  /** Per account, the creation in progress: creations are serialised so the count check and the append cannot interleave. */
  private readonly creating = new Map<string, Promise<unknown>>();

  constructor(private readonly rt: EngineRuntime) {}

  /** Runs `create` after the account's previous creation settled (one process owns the data dir). */
  private serially<T>(accountId: string, create: () => Promise<T>): Promise<T> {
    const previous = this.creating.get(accountId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(create);
    const settled = next.catch(() => undefined);
    this.creating.set(accountId, settled);
    void settled.then(() => {
      if (this.creating.get(accountId) === settled) this.creating.delete(accountId);
    });
    return next;
  }

  /**
   * Registers an operator's own app, owned by (and only visible to) `accountId`; its OAuth client
   * secret is sealed in the event and never returned. A slug the account already registered is a
   * conflict; a catalog slug is a 400.
   */
  async register(accountId: string, input: AppRegistrationInput): Promise<ResolvedApp> {
    this.rt.assertWritable();
    const { errors, registration } = checkAppRegistration(input);
    if (!registration) throw new InvalidFieldsError(errors);
    const { app, client } = registration;
    return this.serially(accountId, () => this.recordApp(accountId, app, client));
  }

  private async recordApp(accountId: string, app: AppSpec, client: CheckedAppRegistration['client']): Promise<ResolvedApp> {
    if (this.rt.queries.apps.app(accountId, app.nameSlug)) throw new ConflictError(`app ${app.nameSlug} is already registered`);
    if (this.rt.queries.apps.appCount(accountId) >= MAX_APPS_PER_ACCOUNT) throw new ConflictError(`an account may register at most ${MAX_APPS_PER_ACCOUNT} apps`);
    await this.rt.appendAndProject(Streams.app(accountId, app.nameSlug), [{
      type: EventTypes.appRegistered,
      data: {
        accountId, nameSlug: app.nameSlug, name: app.name, authType: app.authType, fields: app.fields,
        ...(app.oauth && client ? { oauth: { ...app.oauth, clientId: client.clientId, clientSecret: this.rt.box.seal(client.clientSecret) } } : {}),
      },
      metadata: { actor: accountId },
    }], 'no_stream');
    return this.rt.apps.find(accountId, app.nameSlug)!;
  }

  /** Connects an account of an app from credentials (checked against the app's fields, sealed); returns its id. */
  async connect(accountId: string, c: ConnectAccount): Promise<string> {
    this.rt.assertWritable();
    const app = this.connectableApp(accountId, c.app);
    const errors = checkCredentials(app.spec, c.credentials);
    if (errors.length) throw new InvalidFieldsError(errors);
    const credentials = c.credentials as Credentials;
    return this.serially(accountId, () => this.createAccount(accountId, {
      app: app.spec.nameSlug, name: c.name, credentials, via: 'credentials', times: tokenTimes({ refreshToken: credentials.oauth_refresh_token }, Date.now()),
    }));
  }

  /** Records a new connected account if the account has room for it; call through `serially`. */
  private async createAccount(
    accountId: string, a: { app: string; name: string; credentials: Credentials; via: 'credentials' | 'oauth'; times: TokenTimes },
  ): Promise<string> {
    if (this.rt.queries.apps.connectedAccountCount(accountId) >= MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT) {
      throw new ConflictError(`an account may hold at most ${MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT} connected accounts; delete one first`);
    }
    const id = newId('apn');
    await this.rt.appendAndProject(Streams.connectedAccount(id), [{
      type: EventTypes.connectedAccountCreated,
      data: { connectedAccountId: id, accountId, app: a.app, name: a.name, credentials: this.rt.auth.seal(a.credentials), via: a.via, ...a.times },
      metadata: { actor: accountId },
    }], 'no_stream');
    return id;
  }

  /** Gives a connected account new credentials (and optionally a new name); it is healthy again. */
  async update(accountId: string, id: string, u: { name?: string; credentials: unknown }): Promise<void> {
    this.rt.assertWritable();
    const row = this.rt.queries.ownConnectedAccount(accountId, id);
    const app = this.rt.apps.find(accountId, row.app);
    if (!app) throw new ConflictError(`app ${row.app} of connected account ${id} is no longer known to this server`);
    const errors = checkCredentials(app.spec, u.credentials);
    if (errors.length) throw new InvalidFieldsError(errors);
    const credentials = u.credentials as Credentials;
    await this.rt.appendAndProject(Streams.connectedAccount(id), [{
      type: EventTypes.connectedAccountCredentialsRotated,
      data: {
        connectedAccountId: id, credentials: this.rt.auth.seal(credentials), ...(u.name !== undefined ? { name: u.name } : {}),
        ...tokenTimes({ refreshToken: credentials.oauth_refresh_token }, Date.now()),
      },
      metadata: { actor: accountId },
    }], 'stream_exists');
  }

  /**
   * Deletes a connected account. Sources and steps configured with it keep the reference: their
   * runs then fail with an error naming the account, so the owner sees what to reconnect.
   */
  async delete(accountId: string, id: string): Promise<void> {
    this.rt.assertWritable();
    this.rt.queries.ownConnectedAccount(accountId, id);
    await this.rt.appendAndProject(Streams.connectedAccount(id), [{
      type: EventTypes.connectedAccountDeleted, data: { connectedAccountId: id, accountId }, metadata: { actor: accountId },
    }], 'stream_exists');
  }

  /**
   * The provider's authorize URL for connecting an account of an OAuth app: `client_id`,
   * `redirect_uri` (`<public URL>/v1/oauth/callback`), `scope`, `response_type=code` and a
   * `state` sealed with the server's key that binds the account, the app and the name for
   * {@link OAUTH_STATE_TTL_MS}. With `reconnect` (an `apn_` of the account and the app), the
   * callback gives that account the new tokens instead of creating one.
   */
  oauthStart(accountId: string, slug: string, name: string | undefined, reconnect?: string): string {
    const existing = reconnect === undefined ? undefined : this.rt.queries.ownConnectedAccount(accountId, reconnect);
    if (existing && existing.app !== slug) throw new InvalidFieldsError([{ field: 'account', message: `is a ${existing.app} account, not a ${slug} one` }]);
    const accountName = name ?? existing?.name;
    if (accountName === undefined) throw new InvalidFieldsError([{ field: 'name', message: 'is required (or account, to reconnect one)' }]);
    const app = this.rt.apps.find(accountId, slug);
    if (!app) throw new NotFoundError(`app ${slug}`);
    if (app.spec.authType !== 'oauth' || !app.spec.oauth) throw new InvalidFieldsError([{ field: 'app', message: `app ${slug} is not an OAuth app; create its accounts with POST /v1/accounts` }]);
    if (!app.client) {
      throw new ConflictError(`app ${slug} has no OAuth client on this server; the operator sets SLUICE_OAUTH_${slug.toUpperCase()}_CLIENT_ID and SLUICE_OAUTH_${slug.toUpperCase()}_CLIENT_SECRET`);
    }
    const url = new URL(app.spec.oauth.authorizeUrl);
    url.searchParams.set('client_id', app.client.clientId);
    url.searchParams.set('redirect_uri', this.redirectUri());
    url.searchParams.set('response_type', 'code');
    if (app.spec.oauth.scopes.length) url.searchParams.set('scope', app.spec.oauth.scopes.join(' '));
    url.searchParams.set('state', sealOAuthState(this.rt.box, {
      accountId, app: slug, name: accountName, expiresAt: Date.now() + OAUTH_STATE_TTL_MS, ...(existing ? { connectedAccountId: existing.id } : {}),
    }));
    return url.toString();
  }

  /**
   * Completes an OAuth connection: the `state` authenticates the caller (no API key), the `code`
   * is exchanged at the app's token endpoint (through the server's egress guard), and the
   * account is created with `oauth_access_token`, `oauth_refresh_token` and the token's expiry
   * (or, for a reconnect, given them). Returns the account's owner and id.
   */
  async oauthCallback(cb: OAuthCallback): Promise<{ accountId: string; id: string }> {
    this.rt.assertWritable();
    if (!cb.state) throw new InvalidFieldsError([{ field: 'state', message: 'is required' }]);
    const state = openOAuthState(this.rt.box, cb.state, Date.now());
    if ('refused' in state) throw new InvalidFieldsError([{ field: 'state', message: state.refused }]);
    if (cb.error) throw new InvalidFieldsError([{ field: 'error', message: `the provider did not grant access: ${cb.error.slice(0, 200)}` }]);
    if (!cb.code) throw new InvalidFieldsError([{ field: 'code', message: 'is required' }]);
    const app = this.rt.apps.find(state.accountId, state.app);
    if (!app?.spec.oauth || !app.client) throw new ConflictError(`app ${state.app} has no OAuth client on this server any more`);
    let granted;
    try {
      granted = await requestTokens(app.spec.oauth.tokenUrl, {
        grant_type: 'authorization_code', code: cb.code, redirect_uri: this.redirectUri(), client_id: app.client.clientId, client_secret: app.client.clientSecret,
      }, { egress: { allow: this.rt.config.egressAllow }, timeoutMs: this.rt.config.deliveryTimeoutMs });
    } catch (err) {
      if (err instanceof OAuthTokenError) {
        if (err.permanent) throw new InvalidFieldsError([{ field: 'code', message: err.message }]);
        throw new UpstreamError(`app ${state.app}: ${err.message}`);
      }
      throw err;
    }
    const credentials: Credentials = {
      oauth_access_token: granted.accessToken, ...(granted.refreshToken ? { oauth_refresh_token: granted.refreshToken } : {}),
    };
    const times = tokenTimes({ expiresIn: granted.expiresIn, refreshToken: granted.refreshToken }, Date.now());
    if (state.connectedAccountId !== undefined) {
      // A reconnect: the same account gets the new tokens (and is healthy again), so every source
      // configured with it keeps working without being updated.
      const id = state.connectedAccountId;
      const row = this.rt.queries.ownConnectedAccount(state.accountId, id);
      if (row.app !== state.app) throw new ConflictError(`connected account ${id} is not a ${state.app} account`);
      await this.rt.appendAndProject(Streams.connectedAccount(id), [{
        type: EventTypes.connectedAccountCredentialsRotated,
        data: { connectedAccountId: id, credentials: this.rt.auth.seal(credentials), ...times },
        metadata: { actor: state.accountId },
      }], 'stream_exists');
      return { accountId: state.accountId, id };
    }
    const id = await this.serially(state.accountId, () => this.createAccount(state.accountId, {
      app: state.app, name: state.name, credentials, via: 'oauth', times,
    }));
    return { accountId: state.accountId, id };
  }

  private redirectUri(): string {
    return `${this.rt.config.publicUrl}${OAUTH_CALLBACK_PATH}`;
  }

  private connectableApp(accountId: string, slug: string): ResolvedApp {
    const app = this.rt.apps.find(accountId, slug);
    if (!app) throw new InvalidFieldsError([{ field: 'app', message: `unknown app "${slug}" (GET /v1/apps lists them)` }]);
    if (app.spec.authType === 'none') throw new InvalidFieldsError([{ field: 'app', message: `app ${slug} needs no connected account` }]);
    return app;
  }
}
