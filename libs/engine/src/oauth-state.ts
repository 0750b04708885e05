import { randomBytes } from 'node:crypto';
import type { SecretBox } from '@app/domain';

/** What an OAuth `state` binds: who connects which app under which name, until when. */
export interface OAuthStatePayload {
  accountId: string;
  app: string;
  name: string;
  /** Set when an existing connected account is re-authorised (it gets the new tokens). */
  connectedAccountId?: string;
  /** Epoch ms after which the state is refused. */
  expiresAt: number;
}

/** How long a user has to go through the provider's consent page. */
export const OAUTH_STATE_TTL_MS = 10 * 60 * 1000;

/**
 * The `state` of an authorize redirect: the payload sealed with the server's key (AES-256-GCM,
 * so it is both secret and tamper-evident) plus a random nonce, base64url for the URL. The
 * callback trusts only what it can open: no event and no server-side session is needed.
 */
export function sealOAuthState(box: SecretBox, payload: OAuthStatePayload): string {
  const sealed = box.seal(JSON.stringify({ ...payload, n: randomBytes(8).toString('base64url') }));
  return Buffer.from(sealed.$sealed, 'base64').toString('base64url');
}

/** Opens a `state`; a forged, altered or expired one gives the reason instead. */
export function openOAuthState(box: SecretBox, state: string, now: number): OAuthStatePayload | { refused: string } {
  let p: OAuthStatePayload;
  try {
    if (!/^[A-Za-z0-9_-]{40,4096}$/.test(state)) throw new Error('shape');
    p = JSON.parse(box.open({ $sealed: Buffer.from(state, 'base64url').toString('base64') })) as OAuthStatePayload;
  } catch {
    return { refused: 'is not a state this server issued' };
  }
  if (typeof p.expiresAt !== 'number' || p.expiresAt < now) return { refused: 'has expired; start the connection again' };
  return {
    accountId: p.accountId, app: p.app, name: p.name, expiresAt: p.expiresAt,
    ...(typeof p.connectedAccountId === 'string' ? { connectedAccountId: p.connectedAccountId } : {}),
  };
}
