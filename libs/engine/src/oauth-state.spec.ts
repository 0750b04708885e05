import { randomBytes } from 'node:crypto';
import { SecretBox } from '@app/domain';
import { openOAuthState, sealOAuthState } from './oauth-state';

describe('OAuth state', () => {
  const box = new SecretBox(randomBytes(32));
  const payload = { accountId: 'u_1', app: 'forge', name: 'my forge', expiresAt: 2_000 };

  it('opens what it sealed until it expires, and is URL-safe', () => {
    const state = sealOAuthState(box, payload);
    expect(state).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(openOAuthState(box, state, 1_999)).toEqual(payload);
    expect(openOAuthState(box, state, 2_001)).toEqual({ refused: 'has expired; start the connection again' });
  });

  it('refuses a state altered, sealed with another key, or not a state at all', () => {
    const state = sealOAuthState(box, payload);
    const flipped = `${state.slice(0, 30)}${state[30] === 'A' ? 'B' : 'A'}${state.slice(31)}`;
    const refused = { refused: 'is not a state this server issued' };
    expect(openOAuthState(box, flipped, 0)).toEqual(refused);
    expect(openOAuthState(new SecretBox(randomBytes(32)), state, 0)).toEqual(refused);
    expect(openOAuthState(box, 'short', 0)).toEqual(refused);
    expect(openOAuthState(box, 'a'.repeat(80), 0)).toEqual(refused);
  });

  it('gives two states for the same payload (a nonce), so one cannot be told from another', () => {
    expect(sealOAuthState(box, payload)).not.toBe(sealOAuthState(box, payload));
  });
});
