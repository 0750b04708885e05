import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { OAuthTokenError, requestTokens } from './oauth-client';

/** A token endpoint on 127.0.0.1 whose answer each test sets, recording the form it received. */
describe('requestTokens (a real token endpoint on loopback)', () => {
  let server: Server;
  let url = '';
  let answer: (res: ServerResponse) => void = (res) => res.end();
  let received: { contentType?: string; accept?: string; form: Record<string, string> } | undefined;
  const opts = { egress: { allow: ['127.0.0.1'] }, timeoutMs: 2000 };
  const grant = { grant_type: 'refresh_token', refresh_token: 'rt', client_id: 'cid', client_secret: 'cs' };

  beforeAll(async () => {
    server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      received = { contentType: req.headers['content-type'], accept: req.headers.accept, form: Object.fromEntries(new URLSearchParams(body)) };
      answer(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const json = (status: number, body: unknown) => (res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const refusal = async () => {
    try {
      await requestTokens(url, grant, opts);
    } catch (err) {
      return err as OAuthTokenError;
    }
    throw new Error('expected a refusal');
  };

  it('posts the grant as a form and reads a JSON answer', async () => {
    answer = json(200, { access_token: 'at', refresh_token: 'rt2', expires_in: 3600, token_type: 'bearer' });
    expect(await requestTokens(url, grant, opts)).toEqual({ accessToken: 'at', refreshToken: 'rt2', expiresIn: 3600 });
    expect(received).toEqual({ contentType: 'application/x-www-form-urlencoded', accept: 'application/json', form: grant });
  });

  it('reads a form-encoded answer (GitHub\'s default) and leaves out what the provider did not say', async () => {
    answer = (res) => res.end('access_token=gho_x&scope=repo&token_type=bearer');
    expect(await requestTokens(url, grant, opts)).toEqual({ accessToken: 'gho_x' });
  });

  it('treats a refused grant as permanent, even inside a 200 (Slack\'s style), and never echoes secrets', async () => {
    answer = json(400, { error: 'invalid_grant', error_description: 'revoked' });
    let err = await refusal();
    expect(err).toMatchObject({ name: 'OAuthTokenError', permanent: true, message: 'the provider refused the grant: invalid_grant' });
    answer = json(200, { ok: false, error: 'invalid_refresh_token' });
    err = await refusal();
    expect(err.permanent).toBe(true);
    expect(err.message).toBe('the provider refused the grant: invalid_refresh_token');
    answer = json(401, { error: 'invalid_client' });
    err = await refusal();
    expect(err.permanent).toBe(true);
    expect(err.message).not.toContain('cs');
  });

  it('treats a 5xx, an answer without an access token and a refused destination as worth another try later', async () => {
    answer = json(503, { message: 'down' });
    expect((await refusal()).permanent).toBe(false);
    answer = json(200, { token_type: 'bearer' });
    expect(await refusal()).toMatchObject({ permanent: false, message: 'the token endpoint answered 200 without an access_token' });
    await expect(requestTokens(url, grant, { ...opts, egress: { allow: [] } })).rejects.toMatchObject({ permanent: false, message: expect.stringContaining('egress_denied') });
    answer = json(400, { error: 'slow_down' });
    expect((await refusal()).permanent).toBe(false);
  });
});
