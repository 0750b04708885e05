import type { AppAuthType, AppField } from './app-events';
import type { FieldError } from './component-definition';

/** An app as the API lists it: what `$auth` holds for its connected accounts. */
export interface AppSpec {
  nameSlug: string;
  name: string;
  authType: AppAuthType;
  /** Key apps: the credential fields. OAuth apps: the token fields ({@link OAUTH_FIELDS}). */
  fields: AppField[];
  /** OAuth apps: the provider's endpoints and the scopes asked for (the client comes from the operator). */
  oauth?: { authorizeUrl: string; tokenUrl: string; scopes: string[] };
}

/** What `$auth` holds for an OAuth app's account: the tokens of the grant. */
export const OAUTH_FIELDS: readonly AppField[] = [
  { name: 'oauth_access_token', label: 'Access token', secret: true },
  { name: 'oauth_refresh_token', label: 'Refresh token', secret: true, optional: true },
];

const keys = (nameSlug: string, name: string, fields: AppField[]): AppSpec => ({ nameSlug, name, authType: 'keys', fields });
const oauth = (nameSlug: string, name: string, authorizeUrl: string, tokenUrl: string, scopes: string[]): AppSpec => ({
  nameSlug, name, authType: 'oauth', fields: [...OAUTH_FIELDS], oauth: { authorizeUrl, tokenUrl, scopes },
});

/**
 * The apps shipped with the server. Key apps are usable as they are; an OAuth app needs its
 * client from the operator (`SLUICE_OAUTH_<SLUG>_CLIENT_ID` / `_CLIENT_SECRET`), since a
 * provider issues clients per deployment (the redirect URL is this server's).
 */
export const APP_CATALOG: readonly AppSpec[] = [
  keys('rocketchat', 'Rocket.Chat', [
    { name: 'url', label: 'Server URL', secret: false },
    { name: 'user_id', label: 'User ID', secret: false },
    { name: 'auth_token', label: 'Personal access token', secret: true },
  ]),
  keys('discourse', 'Discourse', [
    { name: 'domain', label: 'Forum domain', secret: false },
    { name: 'api_key', label: 'API key', secret: true },
    { name: 'api_username', label: 'API username', secret: false },
  ]),
  keys('openweather_api', 'OpenWeather', [{ name: 'api_key', label: 'API key', secret: true }]),
  keys('mattermost', 'Mattermost', [
    { name: 'url', label: 'Server URL', secret: false },
    { name: 'personal_access_token', label: 'Personal access token', secret: true },
  ]),
  oauth('github', 'GitHub', 'https://github.com/login/oauth/authorize', 'https://github.com/login/oauth/access_token', ['repo', 'read:user']),
  oauth('slack', 'Slack', 'https://slack.com/oauth/v2/authorize', 'https://slack.com/api/oauth.v2.access', ['channels:read', 'chat:write']),
  oauth('google', 'Google', 'https://accounts.google.com/o/oauth2/v2/auth', 'https://oauth2.googleapis.com/token', ['openid', 'email']),
];

/** The catalog app with this slug. */
export function catalogApp(slug: string): AppSpec | undefined {
  return APP_CATALOG.find((a) => a.nameSlug === slug);
}

/** Longest credential value accepted (characters): tokens and keys are far shorter; this bounds what is sealed and copied into runs. */
export const MAX_CREDENTIAL_CHARS = 8192;

/**
 * Checks credentials against an app's fields: an object whose keys are fields of the app, each a
 * non-empty string of at most {@link MAX_CREDENTIAL_CHARS}, every non-optional field present.
 * Errors name `credentials.<field>`.
 */
export function checkCredentials(app: Pick<AppSpec, 'fields' | 'nameSlug'>, credentials: unknown): FieldError[] {
  if (typeof credentials !== 'object' || credentials === null || Array.isArray(credentials)) {
    return [{ field: 'credentials', message: 'must be an object of the app\'s fields' }];
  }
  const given = credentials as Record<string, unknown>;
  const errors: FieldError[] = [];
  const names = new Set(app.fields.map((f) => f.name));
  for (const k of Object.keys(given)) {
    if (!names.has(k)) errors.push({ field: `credentials.${k}`, message: `is not a field of app ${app.nameSlug} (fields: ${[...names].join(', ')})` });
  }
  for (const f of app.fields) {
    const v = given[f.name];
    const field = `credentials.${f.name}`;
    if (v === undefined || v === null || v === '') {
      if (!f.optional) errors.push({ field, message: 'is required' });
    } else if (typeof v !== 'string') errors.push({ field, message: 'must be a string' });
    else if (v.length > MAX_CREDENTIAL_CHARS) errors.push({ field, message: `must be at most ${MAX_CREDENTIAL_CHARS} characters (got ${v.length})` });
  }
  return errors;
}

/** An app registration as sent to `POST /v1/apps` (snake_case as in the API). */
export interface AppRegistrationInput {
  name_slug?: unknown;
  name?: unknown;
  auth_type?: unknown;
  fields?: unknown;
  oauth?: unknown;
}

/** A checked registration: the app and, for OAuth apps, its client in clear (sealed by the caller). */
export interface CheckedAppRegistration {
  app: AppSpec;
  client?: { clientId: string; clientSecret: string };
}

const SLUG = /^[a-z][a-z0-9_]{1,62}$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_FIELDS = 32;

function httpUrl(v: unknown): boolean {
  if (typeof v !== 'string' || v.length > 2048) return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function text(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.trim() !== '' && v.length <= max;
}

/**
 * Validates an operator's app: `name_slug` (lower-case letters, digits, `_`; not a catalog slug),
 * `name`, `auth_type`, key apps' `fields`, OAuth apps' `oauth` (http(s) URLs, client id and
 * secret, scopes). Errors name the field, as the API reports them.
 */
export function checkAppRegistration(input: AppRegistrationInput): { errors: FieldError[]; registration?: CheckedAppRegistration } {
  const errors: FieldError[] = [];
  if (!text(input.name_slug, 63) || !SLUG.test(input.name_slug)) {
    errors.push({ field: 'name_slug', message: 'is required: 2 to 63 lower-case letters, digits or _, starting with a letter' });
  } else if (catalogApp(input.name_slug)) errors.push({ field: 'name_slug', message: `"${input.name_slug}" is an app of the catalog; choose another slug` });
  if (!text(input.name, 200)) errors.push({ field: 'name', message: 'is required: a non-empty string of at most 200 characters' });
  const authType = input.auth_type;
  if (authType !== 'keys' && authType !== 'oauth' && authType !== 'none') errors.push({ field: 'auth_type', message: 'must be one of keys, oauth, none' });
  const fields: AppField[] = [];
  if (authType === 'keys') {
    if (!Array.isArray(input.fields) || input.fields.length === 0 || input.fields.length > MAX_FIELDS) {
      errors.push({ field: 'fields', message: `must be an array of 1 to ${MAX_FIELDS} fields ({name, label, secret}) for a keys app` });
    } else {
      input.fields.forEach((raw: unknown, i) => {
        const f = raw as Record<string, unknown> | null;
        if (typeof f !== 'object' || f === null || typeof f.name !== 'string' || !FIELD_NAME.test(f.name)) {
          errors.push({ field: `fields.${i}.name`, message: 'is required: letters, digits or _ (at most 64), not starting with a digit' });
          return;
        }
        if (fields.some((o) => o.name === f.name)) errors.push({ field: `fields.${i}.name`, message: `"${f.name}" is given twice` });
        if (f.label !== undefined && !text(f.label, 200)) errors.push({ field: `fields.${i}.label`, message: 'must be a non-empty string of at most 200 characters' });
        if (f.secret !== undefined && typeof f.secret !== 'boolean') errors.push({ field: `fields.${i}.secret`, message: 'must be true or false' });
        if (f.optional !== undefined && typeof f.optional !== 'boolean') errors.push({ field: `fields.${i}.optional`, message: 'must be true or false' });
        fields.push({ name: f.name, label: typeof f.label === 'string' ? f.label : f.name, secret: f.secret !== false, ...(f.optional === true ? { optional: true } : {}) });
      });
    }
  } else if (input.fields !== undefined && !(Array.isArray(input.fields) && input.fields.length === 0)) {
    errors.push({ field: 'fields', message: 'are only for keys apps (an OAuth app\'s $auth holds its tokens)' });
  }
  let client: CheckedAppRegistration['client'];
  let endpoints: AppSpec['oauth'];
  if (authType === 'oauth') {
    const o = input.oauth as Record<string, unknown> | null | undefined;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) errors.push({ field: 'oauth', message: 'is required for an oauth app: {authorize_url, token_url, client_id, client_secret, scopes}' });
    else {
      if (!httpUrl(o.authorize_url)) errors.push({ field: 'oauth.authorize_url', message: 'must be an http or https URL' });
      if (!httpUrl(o.token_url)) errors.push({ field: 'oauth.token_url', message: 'must be an http or https URL' });
      if (!text(o.client_id, 512)) errors.push({ field: 'oauth.client_id', message: 'is required: a string of at most 512 characters' });
      if (!text(o.client_secret, 2048)) errors.push({ field: 'oauth.client_secret', message: 'is required: a string of at most 2048 characters' });
      const scopes = o.scopes === undefined ? [] : typeof o.scopes === 'string' ? o.scopes.split(/\s+/).filter(Boolean) : o.scopes;
      if (!Array.isArray(scopes) || scopes.length > 64 || !scopes.every((s) => text(s, 200) && !/\s/.test(s))) {
        errors.push({ field: 'oauth.scopes', message: 'must be an array of at most 64 scopes (strings without spaces) or one space-separated string' });
      } else if (errors.length === 0) {
        endpoints = { authorizeUrl: o.authorize_url as string, tokenUrl: o.token_url as string, scopes: scopes as string[] };
        client = { clientId: o.client_id as string, clientSecret: o.client_secret as string };
      }
    }
  } else if (input.oauth !== undefined) errors.push({ field: 'oauth', message: 'is only for oauth apps' });
  if (errors.length) return { errors };
  const app: AppSpec = {
    nameSlug: input.name_slug as string,
    name: input.name as string,
    authType: authType as AppAuthType,
    fields: authType === 'oauth' ? [...OAUTH_FIELDS] : fields,
    ...(endpoints ? { oauth: endpoints } : {}),
  };
  return { errors: [], registration: { app, ...(client ? { client } : {}) } };
}
