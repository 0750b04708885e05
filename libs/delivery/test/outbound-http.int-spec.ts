import * as net from 'node:net';
import { EgressError } from '../src/delivery.types';
import { EgressGuard } from '../src/egress-guard';
import { closeIdleOutboundConnections, guardedFetch, performOutbound, performPost } from '../src/outbound-http';
import { closedLoopbackPort, LoopbackServer, startLoopbackServer } from './loopback-server.helper';

const loopbackOnly = { allow: ['127.0.0.1'] };
const nothingAllowed = { allow: [] as string[] };

async function egressError(promise: Promise<unknown>): Promise<EgressError> {
  const error = await promise.then(
    () => {
      throw new Error('expected an EgressError');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EgressError);
  return error as EgressError;
}

const servers: LoopbackServer[] = [];
async function server(handle: Parameters<typeof startLoopbackServer>[0]): Promise<LoopbackServer> {
  const started = await startLoopbackServer(handle);
  servers.push(started);
  return started;
}

afterEach(async () => {
  closeIdleOutboundConnections();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  jest.restoreAllMocks();
});

describe('performOutbound against real loopback servers', () => {
  it('sends method, headers and body, and returns status, headers and body', async () => {
    const target = await server((req, res) => {
      res.setHeader('x-multi', ['a', 'b']);
      res.writeHead(201, { 'content-type': 'text/plain' }).end(`got ${req.method}`);
    });
    const response = await performOutbound(
      { url: target.url('/path?q=1'), method: 'POST', headers: { 'content-type': 'application/json', 'x-test': 'yes' }, body: '{"a":1}', timeoutMs: 5000 },
      loopbackOnly,
    );
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('text/plain');
    expect(response.headers['x-multi']).toBe('a, b');
    expect(response.body.toString()).toBe('got POST');
    expect(response.durationMs).toBeGreaterThanOrEqual(0);
    expect(target.requests[0]).toMatchObject({ method: 'POST', url: '/path?q=1', body: '{"a":1}' });
    expect(target.requests[0].headers['x-test']).toBe('yes');
    expect(target.requests[0].headers['content-length']).toBe('7');
  });

  it('is also exported as guardedFetch', () => {
    expect(guardedFetch).toBe(performOutbound);
  });

  it('reuses one keep-alive connection for consecutive requests', async () => {
    const target = await server((_req, res) => res.end('ok'));
    for (let i = 0; i < 3; i++) {
      await performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000 }, loopbackOnly);
    }
    expect(target.requests).toHaveLength(3);
    expect(target.connections()).toBe(1);
  });

  it('does not follow redirects: a 302 comes back as is', async () => {
    const target = await server((req, res) => {
      if (req.url === '/hook') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.end('followed');
    });
    const response = await performOutbound({ url: target.url(), method: 'POST', headers: {}, body: 'x', timeoutMs: 5000 }, loopbackOnly);
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('/elsewhere');
    expect(target.requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it('times out against a server that never answers', async () => {
    const target = await server(() => undefined);
    const started = Date.now();
    const error = await egressError(performOutbound({ url: target.url(), method: 'POST', headers: {}, body: '{}', timeoutMs: 300 }, loopbackOnly));
    const elapsed = Date.now() - started;
    expect(error.code).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2000);
  });

  it('counts the body against the timeout, not only the headers', async () => {
    const target = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const error = await egressError(performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 300 }, loopbackOnly));
    expect(error.code).toBe('timeout');
  });

  it('keeps at most maxResponseBytes of a large body, 1 MiB by default', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024, 'a');
    const target = await server((_req, res) => res.end(big));
    const small = await performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000, maxResponseBytes: 1000 }, loopbackOnly);
    expect(small.status).toBe(200);
    expect(small.body).toEqual(Buffer.alloc(1000, 'a'));
    const byDefault = await performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000 }, loopbackOnly);
    expect(byDefault.body.length).toBe(1024 * 1024);
    const exact = await performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000, maxResponseBytes: big.length }, loopbackOnly);
    expect(exact.body.length).toBe(big.length);
  });

  it('refuses loopback without an allow-list entry, before connecting', async () => {
    const target = await server((_req, res) => res.end('reached'));
    const connect = jest.spyOn(net.Socket.prototype, 'connect');
    const error = await egressError(performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000 }, nothingAllowed));
    expect(error.code).toBe('egress_denied');
    expect(error.message).toContain('loopback');
    expect(connect).not.toHaveBeenCalled();
    expect(target.connections()).toBe(0);
    const viaLocalhost = await egressError(
      performOutbound({ url: `http://localhost:${target.port}/hook`, method: 'GET', headers: {}, timeoutMs: 5000 }, nothingAllowed),
    );
    expect(viaLocalhost.code).toBe('egress_denied');
    const mapped = await egressError(
      performOutbound({ url: `http://[::ffff:127.0.0.1]:${target.port}/hook`, method: 'GET', headers: {}, timeoutMs: 5000 }, nothingAllowed),
    );
    expect(mapped.code).toBe('egress_denied');
    expect(target.connections()).toBe(0);
    expect(connect).not.toHaveBeenCalled();
    // The spy does see connections: the same request goes through once loopback is allowed.
    await performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000 }, loopbackOnly);
    expect(connect).toHaveBeenCalled();
  });

  it.each([
    ['an IP', ['127.0.0.1'], '127.0.0.1'],
    ['a CIDR', ['127.0.0.0/8'], '127.0.0.1'],
    ['a host name', ['localhost'], 'localhost'],
    ['an IP, reached through a name', ['127.0.0.1'], 'localhost'],
  ])('allows loopback listed as %s', async (_label, allow, host) => {
    const target = await server((_req, res) => res.end('reached'));
    const response = await performOutbound({ url: `http://${host}:${target.port}/hook`, method: 'GET', headers: {}, timeoutMs: 5000 }, { allow });
    expect(response.body.toString()).toBe('reached');
  });

  it('allows a host name only under that name, not its address', async () => {
    const target = await server((_req, res) => res.end('reached'));
    const error = await egressError(performOutbound({ url: target.url(), method: 'GET', headers: {}, timeoutMs: 5000 }, { allow: ['localhost'] }));
    expect(error.code).toBe('egress_denied');
  });

  it('refuses private, link-local and metadata addresses at once without any connection attempt', async () => {
    const connect = jest.spyOn(net.Socket.prototype, 'connect');
    for (const url of [
      'http://10.255.255.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://0.0.0.0:80/',
      'http://[fd00:ec2::254]/',
      'http://[::ffff:10.0.0.1]/',
      'https://[fe80::1]/',
    ]) {
      const started = Date.now();
      const error = await egressError(performOutbound({ url, method: 'POST', headers: {}, body: '{}', timeoutMs: 10_000 }, loopbackOnly));
      expect(error.code).toBe('egress_denied');
      // Far below the 10 s timeout (a loaded machine may take a while to answer anything at all).
      expect(Date.now() - started).toBeLessThan(2000);
    }
    expect(connect).not.toHaveBeenCalled();
  });

  it.each(['not a url', 'ftp://127.0.0.1/file', 'file:///etc/passwd', 'javascript:alert(1)', '/relative/path'])(
    'rejects %p as an invalid URL',
    async (url) => {
      const error = await egressError(performOutbound({ url, method: 'GET', headers: {}, timeoutMs: 1000 }, loopbackOnly));
      expect(error.code).toBe('invalid_url');
    },
  );

  it('does not echo the URL, which may carry credentials, in errors', async () => {
    const error = await egressError(performOutbound({ url: 'http://user:s3cret@[::1', method: 'GET', headers: {}, timeoutMs: 1000 }, loopbackOnly));
    expect(error.message).not.toContain('s3cret');
  });

  it('sends URL credentials as basic auth', async () => {
    const target = await server((_req, res) => res.end());
    await performOutbound({ url: `http://us%40er:p%3Ass@127.0.0.1:${target.port}/hook`, method: 'GET', headers: {}, timeoutMs: 5000 }, loopbackOnly);
    expect(target.requests[0].headers.authorization).toBe('Basic ' + Buffer.from('us@er:p:ss').toString('base64'));
  });

  it('reports a refused connection as a network error', async () => {
    const port = await closedLoopbackPort();
    const error = await egressError(performOutbound({ url: `http://127.0.0.1:${port}/`, method: 'GET', headers: {}, timeoutMs: 5000 }, loopbackOnly));
    expect(error.code).toBe('network');
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('retries once on a fresh connection when a kept-alive socket turns out closed', async () => {
    const perConnection = new Map<number, number>();
    const target = await server((req, res, received) => {
      const served = (perConnection.get(received.connection) ?? 0) + 1;
      perConnection.set(received.connection, served);
      // Behaves like a server whose keep-alive timer closed the connection just as it was reused.
      if (served > 1) req.socket.destroy();
      else res.end(`connection ${received.connection}`);
    });
    const request = { url: target.url(), method: 'POST', headers: {}, body: 'x', timeoutMs: 5000 };
    expect((await performOutbound(request, loopbackOnly)).body.toString()).toBe('connection 1');
    expect((await performOutbound(request, loopbackOnly)).body.toString()).toBe('connection 2');
    expect(target.requests).toHaveLength(3);
  });

  it('does not retry when a fresh connection is reset', async () => {
    const target = await server((req) => req.socket.destroy());
    const error = await egressError(performOutbound({ url: target.url(), method: 'POST', headers: {}, body: 'x', timeoutMs: 5000 }, loopbackOnly));
    expect(error.code).toBe('network');
    expect(target.requests).toHaveLength(1);
  });

  it('rejects a timeout Node timers cannot hold as a programming error', async () => {
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      await expect(performOutbound({ url: 'http://127.0.0.1/', method: 'GET', headers: {}, timeoutMs }, loopbackOnly)).rejects.toThrow(RangeError);
    }
  });
});

describe('performPost to a receiver the guard has just allowed', () => {
  // An allow list of its own, so no other test's cached decision is met.
  const policy = { allow: ['127.0.0.1', '192.0.2.77'] };

  it('asks the guard once while its decision is cached; a later POST is still bounded by its own deadline', async () => {
    const checks = jest.spyOn(EgressGuard.prototype, 'check');
    let answer = true;
    const target = await server((_req, res) => {
      if (answer) res.end('ok');
    });
    const post = (timeoutMs: number) => performPost({ url: target.url('/hook?x=1'), headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs }, policy);
    expect((await post(2000)).status).toBe(200);
    expect((await post(2000)).status).toBe(200);
    expect(checks).toHaveBeenCalledTimes(1);
    expect(target.requests.map((r) => r.url)).toEqual(['/hook?x=1', '/hook?x=1']);
    answer = false;
    const started = Date.now();
    expect((await egressError(post(300))).code).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(checks).toHaveBeenCalledTimes(1);
  });

  it('rejects, never throws, a timeout timers cannot hold, a URL it cannot use, a bad allow list or header, cached decision or not', async () => {
    const target = await server((_req, res) => res.end('ok'));
    await performPost({ url: target.url(), headers: {}, body: '{}', timeoutMs: 2000 }, policy);
    const attempts = [
      () => performPost({ url: target.url(), headers: {}, body: '{}', timeoutMs: 0 }, policy),
      () => performPost({ url: 'not a url', headers: {}, body: '{}', timeoutMs: 2000 }, policy),
      () => performPost({ url: 'ftp://127.0.0.1/', headers: {}, body: '{}', timeoutMs: 2000 }, policy),
      () => performPost({ url: target.url(), headers: {}, body: '{}', timeoutMs: 2000 }, { allow: ['not an address/99'] }),
      () => performPost({ url: target.url(), headers: { 'x-bad': 'line\nbreak' }, body: '{}', timeoutMs: 2000 }, policy),
    ];
    const outcomes = attempts.map((attempt) => {
      try {
        return attempt().then(() => 'resolved', (e: unknown) => (e as Error).constructor.name + ':' + ((e as EgressError).code ?? ''));
      } catch {
        return Promise.resolve('threw');
      }
    });
    expect(await Promise.all(outcomes)).toEqual(['RangeError:', 'EgressError:invalid_url', 'EgressError:invalid_url', 'Error:', 'TypeError:']);
  });
});
