import type { SealedSecret } from './secret-box';

/*
 * Payloads of the apps and connected accounts events (issue 9). An operator's app lives on
 * `app-<account>.<slug>`, each connected account (`apn_...`) on `connectedaccount-<apn>`.
 * Credentials are sealed as one JSON object (SecretBox): the log never holds them in clear.
 */

/** How an app authenticates: fields the user types (`keys`), an OAuth 2 grant (`oauth`), or nothing. */
export type AppAuthType = 'keys' | 'oauth' | 'none';

/** A credential field of a key app (`$auth.<name>`). */
export interface AppField {
  name: string;
  label: string;
  /** Hidden in UIs; every credential is sealed anyway. */
  secret: boolean;
  /** May be left out of `credentials`. */
  optional?: boolean;
}

/** The OAuth 2 endpoints and client of an app; the client secret sealed. */
export interface SealedOAuthClient {
  authorizeUrl: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: SealedSecret;
  scopes: string[];
}

/** `POST /v1/apps`: an operator's own app, owned by (and visible to) the account that registered it. */
export interface AppRegistered {
  accountId: string;
  nameSlug: string;
  name: string;
  authType: AppAuthType;
  fields: AppField[];
  oauth?: SealedOAuthClient;
}

/** When an OAuth access token expires and when to refresh it (epoch ms); absent for key apps. */
export interface TokenTimes {
  expiresAt?: number;
  /** The background refresher renews the token from this time on (before `expiresAt`). */
  refreshAt?: number;
  /** Whether a refresh token is held (a token without one cannot be renewed). */
  refreshable?: boolean;
}

/** A connected account was created: an app's credentials (typed, or from an OAuth grant). */
export interface ConnectedAccountCreated extends TokenTimes {
  connectedAccountId: string;
  accountId: string;
  app: string;
  name: string;
  credentials: SealedSecret;
  via: 'credentials' | 'oauth';
}

/** New credentials given by the user (`PUT /v1/accounts/{id}`); the account is healthy again. */
export interface ConnectedAccountCredentialsRotated extends TokenTimes {
  connectedAccountId: string;
  name?: string;
  credentials: SealedSecret;
}

/** The server renewed an OAuth access token with the refresh token. */
export interface ConnectedAccountTokensRefreshed extends TokenTimes {
  connectedAccountId: string;
  credentials: SealedSecret;
}

/** The provider refused the refresh token (`invalid_grant` and the like): the account is unhealthy until new credentials. */
export interface ConnectedAccountRefreshFailed {
  connectedAccountId: string;
  error: string;
}

/** The user deleted a connected account; runs configured with it fail naming it from now on. */
export interface ConnectedAccountDeleted { connectedAccountId: string; accountId: string }
