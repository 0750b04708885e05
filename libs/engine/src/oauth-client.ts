import { EgressError, performOutbound } from '@app/delivery';
import type { EgressPolicy } from '@app/delivery';

/** Tokens a provider's token endpoint granted. */
export interface GrantedTokens {
  accessToken: string;
  refreshToken?: string;
  /** Seconds the access token lives, when the provider says. */
  expiresIn?: number;
}

/**
 * The token endpoint refused or failed. `permanent`: the provider refused the grant itself
 * (`invalid_grant`, `invalid_client`, `unauthorized_client`, `unsupported_grant_type`, ...): asking
 * again with the same refresh token cannot succeed, so the account needs new credentials.
 * Otherwise (network, timeout, 5xx, an unreadable answer) a later try may succeed.
 */
export class OAuthTokenError extends Error {
  constructor(message: string, readonly permanent: boolean) {
    super(message);
    this.name = 'OAuthTokenError';
  }
}

// `invalid_refresh_token` is Slack's word for a revoked refresh token.
const PERMANENT_ERRORS = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client', 'unsupported_grant_type', 'invalid_request', 'invalid_refresh_token']);
/** A token answer larger than this is not a token answer. */
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

/**
 * POSTs a grant (`authorization_code` or `refresh_token`, RFC 6749 4.1.3 / 6) to a token
 * endpoint through the server's egress guard (`SLUICE_EGRESS_ALLOW`), with the client's
 * credentials in the form body as most providers accept them. The provider's answer is read as
 * JSON, or as a form-encoded body (GitHub's default). Errors never carry the tokens or the client
 * secret: only the provider's `error` code and status.
 */
export async function requestTokens(
  tokenUrl: string, grant: Record<string, string>, opts: { egress: EgressPolicy; timeoutMs: number },
): Promise<GrantedTokens> {
  let res;
  try {
    res = await performOutbound({
      url: tokenUrl,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(grant).toString(),
      timeoutMs: opts.timeoutMs,
      maxResponseBytes: MAX_TOKEN_RESPONSE_BYTES,
    }, opts.egress);
  } catch (err) {
    // Not the grant's fault: an egress refusal is the operator's to fix (SLUICE_EGRESS_ALLOW), and
    // the accounts must not be marked unhealthy for it.
    if (err instanceof EgressError) throw new OAuthTokenError(`the token endpoint could not be reached (${err.code}: ${err.message})`, false);
    throw err;
  }
  const text = res.body.toString('utf8');
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = Object.fromEntries(new URLSearchParams(text));
  }
  const error = typeof body.error === 'string' ? body.error.slice(0, 100) : undefined;
  if (error !== undefined || res.status >= 400) {
    const code = error ?? `HTTP ${res.status}`;
    const permanent = error !== undefined ? PERMANENT_ERRORS.has(error) : res.status === 400 || res.status === 401;
    throw new OAuthTokenError(`the provider refused the grant: ${code}`, permanent);
  }
  if (typeof body.access_token !== 'string' || body.access_token === '') {
    throw new OAuthTokenError(`the token endpoint answered ${res.status} without an access_token`, false);
  }
  const expiresIn = Number(body.expires_in);
  return {
    accessToken: body.access_token,
    ...(typeof body.refresh_token === 'string' && body.refresh_token !== '' ? { refreshToken: body.refresh_token } : {}),
    ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresIn } : {}),
  };
}
