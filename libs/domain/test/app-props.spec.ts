import { ConnectedAccountFacts, isAuthProvisionRef, PropDefinition, validateAppProps } from '@app/domain';

describe('validateAppProps', () => {
  const props: PropDefinition[] = [
    { name: 'chat', type: 'app', app: 'rocketchat' },
    { name: 'forum', type: 'app', app: 'discourse', optional: true },
    { name: 'demo', type: 'app', app: 'demo' },
    { name: 'text', type: 'string' },
  ];
  const accounts: Record<string, ConnectedAccountFacts> = {
    apn_mine: { accountId: 'u_1', app: 'rocketchat' },
    apn_forum: { accountId: 'u_1', app: 'discourse' },
    apn_theirs: { accountId: 'u_2', app: 'rocketchat' },
  };
  const known = (app: string | undefined) => app === 'rocketchat' || app === 'discourse';
  const check = (given: Record<string, unknown> | undefined, previous?: Record<string, unknown>) =>
    validateAppProps(props, given, 'u_1', (id) => accounts[id], known, previous);

  it('given references to own accounts of the right apps, then it stores the references only', () => {
    expect(check({ chat: { authProvisionId: 'apn_mine' }, forum: { authProvisionId: 'apn_forum' }, text: 'x' })).toEqual({
      values: { chat: { authProvisionId: 'apn_mine' }, forum: { authProvisionId: 'apn_forum' } }, errors: [],
    });
  });

  it('when a prop of a known app is missing, then it is required unless optional; an app the server does not know needs no account', () => {
    expect(check({}).errors).toEqual([{ field: 'configured_props.chat', message: 'is required: {"authProvisionId": "apn_..."} of a connected rocketchat account' }]);
  });

  it('when the value is not a reference, names another account\'s or a missing account, or one of another app, then each is refused by field', () => {
    expect(check({ chat: 'apn_mine', forum: { authProvisionId: 'apn_mine' } }).errors).toEqual([
      { field: 'configured_props.chat', message: 'must be {"authProvisionId": "apn_..."} (a connected rocketchat account)' },
      { field: 'configured_props.forum', message: 'connected account apn_mine is a rocketchat account; this prop needs a discourse account' },
    ]);
    expect(check({ chat: { authProvisionId: 'apn_theirs' } }).errors).toEqual([{ field: 'configured_props.chat', message: 'connected account apn_theirs not found' }]);
    expect(check({ chat: { authProvisionId: 'apn_gone' } }).errors).toEqual([{ field: 'configured_props.chat', message: 'connected account apn_gone not found' }]);
  });

  it('when an update gives no props, then the stored references are kept as they are', () => {
    expect(check(undefined, { chat: { authProvisionId: 'apn_deleted_since' } })).toEqual({ values: { chat: { authProvisionId: 'apn_deleted_since' } }, errors: [] });
  });

  it('recognises only the exact reference shape', () => {
    expect(isAuthProvisionRef({ authProvisionId: 'apn_1' })).toBe(true);
    expect(isAuthProvisionRef({ authProvisionId: 'apn_1', extra: 1 })).toBe(false);
    expect(isAuthProvisionRef({ authProvisionId: 'dc_1' })).toBe(false);
    expect(isAuthProvisionRef(['apn_1'])).toBe(false);
  });
});
