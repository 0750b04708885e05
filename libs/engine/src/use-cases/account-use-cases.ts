import { EventTypes, newId, Streams } from '@app/domain';
import { hashApiKey } from '../api-key-hash';
import { ApiKeyInUseError, InvalidFieldsError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';

/** Accounts and their API keys. */
export class AccountUseCases {
  constructor(private readonly rt: EngineRuntime) {}

  /**
   * Creates an account with one API key (only the key's hash is recorded); returns its id. A key
   * already issued (to any account, even revoked) is refused with `ApiKeyInUseError`: issuing it
   * again would move it and lock its owner out. The check and the append do not race: every
   * caller (the server's bootstrap, the admin command) holds the data-dir lock, and the read
   * models are caught up.
   */
  async create(name: string, key: string, accountId = newId('u')): Promise<string> {
    if (!key || /\s/.test(key)) throw new InvalidFieldsError([{ field: 'key', message: 'must be non-empty and contain no whitespace' }], 'an API key must be non-empty and contain no whitespace');
    this.rt.assertWritable();
    await this.rt.settle();
    const keyHash = hashApiKey(key);
    if (this.rt.queries.accountIssuedKeyHash(keyHash) !== undefined) throw new ApiKeyInUseError();
    await this.rt.appendAndProject(Streams.account(accountId), [
      { type: EventTypes.accountCreated, data: { accountId, name }, metadata: { actor: 'system' } },
      {
        type: EventTypes.apiKeyIssued,
        data: { accountId, keyId: newId('key'), keyHash, prefix: key.slice(0, 7) },
        metadata: { actor: 'system' },
      },
    ], 'no_stream');
    return accountId;
  }
}
