import { APP_CATALOG, catalogApp, checkAppRegistration, checkCredentials } from '@app/domain';

describe('app catalog and credentials', () => {
  it('ships key apps with fields and OAuth apps with endpoints, under unique slugs', () => {
    expect(new Set(APP_CATALOG.map((a) => a.nameSlug)).size).toBe(APP_CATALOG.length);
    expect(catalogApp('discourse')?.fields.map((f) => f.name)).toEqual(['domain', 'api_key', 'api_username']);
    expect(catalogApp('github')).toMatchObject({ authType: 'oauth', oauth: { tokenUrl: 'https://github.com/login/oauth/access_token' } });
  });

  it('checks credentials against the app\'s fields, naming each bad one', () => {
    const app = catalogApp('rocketchat')!;
    expect(checkCredentials(app, { url: 'https://chat.example', user_id: 'u', auth_token: 't' })).toEqual([]);
    expect(checkCredentials(app, { url: 'https://chat.example', user_id: 7, password: 'p' })).toEqual([
      { field: 'credentials.password', message: 'is not a field of app rocketchat (fields: url, user_id, auth_token)' },
      { field: 'credentials.user_id', message: 'must be a string' },
      { field: 'credentials.auth_token', message: 'is required' },
    ]);
    expect(checkCredentials(app, { url: 'x', user_id: 'u', auth_token: 'a'.repeat(8193) })[0].field).toBe('credentials.auth_token');
    expect(checkCredentials(app, [])).toEqual([{ field: 'credentials', message: 'must be an object of the app\'s fields' }]);
    expect(checkCredentials(catalogApp('github')!, { oauth_access_token: 'at' })).toEqual([]);
  });

  it('registers an operator\'s OAuth app with its client kept apart (to be sealed), scopes from a string or an array', () => {
    const r = checkAppRegistration({
      name_slug: 'forge', name: 'Forge', auth_type: 'oauth',
      oauth: { authorize_url: 'https://forge.example/authorize', token_url: 'https://forge.example/token', client_id: 'id', client_secret: 'secret', scopes: 'repo user' },
    });
    expect(r.errors).toEqual([]);
    expect(r.registration).toEqual({
      app: { nameSlug: 'forge', name: 'Forge', authType: 'oauth', fields: catalogApp('github')!.fields, oauth: { authorizeUrl: 'https://forge.example/authorize', tokenUrl: 'https://forge.example/token', scopes: ['repo', 'user'] } },
      client: { clientId: 'id', clientSecret: 'secret' },
    });
  });

  it('refuses a catalog slug, a bad auth type, fields on an OAuth app and an OAuth block on a keys app', () => {
    expect(checkAppRegistration({ name_slug: 'github', name: 'G', auth_type: 'keys', fields: [{ name: 'k' }] }).errors).toEqual([
      { field: 'name_slug', message: '"github" is an app of the catalog; choose another slug' },
    ]);
    expect(checkAppRegistration({ name_slug: 'x1', name: 'X', auth_type: 'basic' }).errors.map((e) => e.field)).toEqual(['auth_type']);
    expect(checkAppRegistration({ name_slug: 'x1', name: 'X', auth_type: 'keys', fields: [{ name: 'k' }], oauth: {} }).errors.map((e) => e.field)).toEqual(['oauth']);
    expect(checkAppRegistration({ name_slug: 'x1', name: 'X', auth_type: 'keys', fields: [{ name: 'k' }, { name: 'k' }] }).errors).toEqual([
      { field: 'fields.1.name', message: '"k" is given twice' },
    ]);
    const keys = checkAppRegistration({ name_slug: 'x1', name: 'X', auth_type: 'keys', fields: [{ name: 'token', label: 'Token' }, { name: 'host', secret: false, optional: true }] });
    expect(keys.registration?.app.fields).toEqual([{ name: 'token', label: 'Token', secret: true }, { name: 'host', label: 'host', secret: false, optional: true }]);
  });
});
