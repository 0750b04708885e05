import { randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * A small OAuth 2 provider and API on 127.0.0.1 for tests: `/authorize` redirects back with a
 * code, `/token` grants and refreshes tokens (rotating refresh tokens, short-lived access
 * tokens), `/user` answers only for an access token that is live. It checks everything it
 * receives (client id and secret, redirect URI, codes, tokens) and records what it saw.
 */
export class FakeOAuthProvider {
  readonly clientId = 'forge-client-id';
  readonly clientSecret = `forge-client-secret-${randomBytes(8).toString('hex')}`;
  /** Access-token lifetime it grants, in seconds. */
  expiresIn = 2;
  /** Every access and refresh token it issued, in order (for the data-dir scan). */
  readonly issued: string[] = [];
  /** Refresh grants received, and how many it accepted. */
  refreshGrants = 0;
  refreshesAccepted = 0;
  /** Access tokens the API accepted, in order. */
  readonly apiTokens: string[] = [];
  private server?: Server;
  private readonly codes = new Map<string, string>();
  private readonly access = new Map<string, number>();
  private readonly refresh = new Set<string>();
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** Makes every refresh token issued so far unusable (the user revoked the grant). */
  revokeRefreshTokens(): void {
    this.refresh.clear();
  }

  /** Whether an access token is live now. */
  isLive(token: string): boolean {
    const until = this.access.get(token);
    return until !== undefined && until > Date.now();
  }

  private grant(): Record<string, unknown> {
    const accessToken = `forge_at_${randomBytes(12).toString('hex')}`;
    const refreshToken = `forge_rt_${randomBytes(12).toString('hex')}`;
    this.access.set(accessToken, Date.now() + this.expiresIn * 1000);
    this.refresh.add(refreshToken);
    this.issued.push(accessToken, refreshToken);
    return { access_token: accessToken, refresh_token: refreshToken, expires_in: this.expiresIn, token_type: 'bearer' };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', this.url);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && u.pathname === '/authorize') {
      const redirect = u.searchParams.get('redirect_uri');
      if (u.searchParams.get('client_id') !== this.clientId || !redirect || u.searchParams.get('response_type') !== 'code') return json(400, { error: 'invalid_request' });
      const code = `code_${randomBytes(8).toString('hex')}`;
      this.codes.set(code, redirect);
      const back = new URL(redirect);
      back.searchParams.set('code', code);
      back.searchParams.set('state', u.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      return void res.end();
    }
    if (req.method === 'POST' && u.pathname === '/token') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const form = new URLSearchParams(body);
      if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret) return json(401, { error: 'invalid_client' });
      if (form.get('grant_type') === 'authorization_code') {
        const code = form.get('code') ?? '';
        const redirect = this.codes.get(code);
        this.codes.delete(code);
        if (!redirect || redirect !== form.get('redirect_uri')) return json(400, { error: 'invalid_grant' });
        return json(200, this.grant());
      }
      if (form.get('grant_type') === 'refresh_token') {
        this.refreshGrants++;
        const token = form.get('refresh_token') ?? '';
        if (!this.refresh.has(token)) return json(400, { error: 'invalid_grant', error_description: 'the refresh token was revoked' });
        this.refresh.delete(token);
        this.refreshesAccepted++;
        return json(200, this.grant());
      }
      return json(400, { error: 'unsupported_grant_type' });
    }
    if (req.method === 'GET' && u.pathname === '/user') {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!this.isLive(token)) return json(401, { message: 'Bad credentials' });
      this.apiTokens.push(token);
      return json(200, { login: 'octo', token_tail: token.slice(-6) });
    }
    json(404, { error: 'not found' });
  }
}
