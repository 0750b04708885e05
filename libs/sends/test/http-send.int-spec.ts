import { closeIdleOutboundConnections } from '@app/delivery';
import type { SendsConfig } from '@app/config';
import { LoopbackServer, startLoopbackServer } from '../../delivery/test/loopback-server.helper';
import { performSend, RESPONSE_EXCERPT_BYTES, SendContext } from '../src';

const sends: SendsConfig = { timeoutMs: 5_000 };

function context(allow: string[]): SendContext {
  return { dataDir: '/nonexistent-data-dir', componentEgressAllow: allow, sends, sendId: 'run_1-step-0' };
}

describe('performSend http', () => {
  let receiver: LoopbackServer;
  beforeAll(async () => {
    receiver = await startLoopbackServer((req, res) => {
      if (req.url?.startsWith('/big')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(100_000));
      } else if (req.url?.startsWith('/silent')) {
        // Never answers: the send's timeout has to end it.
      } else if (req.url?.startsWith('/broken')) {
        res.writeHead(503);
        res.end('down for maintenance');
      } else {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end('{"received":true}');
      }
    });
  });
  beforeEach(() => receiver.requests.splice(0));
  afterAll(async () => {
    closeIdleOutboundConnections();
    await receiver.close();
  });

  it('sends method, headers, params and JSON data to an allow-listed receiver and records the status', async () => {
    const outcome = await performSend(
      { kind: 'http', params: { method: 'post', url: receiver.url('/hook?a=1'), headers: { 'X-Trace': 't-1' }, params: { b: 2, c: ['x', 'y'] }, data: { hello: 'world' } } },
      context(['127.0.0.1']),
    );
    expect(outcome).toMatchObject({ kind: 'http', ok: true, status: 201, destination: `POST http://127.0.0.1:${receiver.port}/hook`, responseExcerpt: '{"received":true}' });
    expect(outcome.error).toBeUndefined();
    expect(typeof outcome.at).toBe('number');
    expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome);
    expect(receiver.requests).toHaveLength(1);
    const [request] = receiver.requests;
    expect(request).toMatchObject({ method: 'POST', url: '/hook?a=1&b=2&c=x&c=y', body: '{"hello":"world"}' });
    expect(request.headers).toMatchObject({ 'x-trace': 't-1', 'content-type': 'application/json' });
  });

  it('sends a string body as text unless the step gave a content type', async () => {
    await performSend({ kind: 'http', params: { method: 'PUT', url: receiver.url('/text'), data: 'plain words' } }, context(['127.0.0.1']));
    await performSend({ kind: 'http', params: { method: 'PUT', url: receiver.url('/csv'), headers: { 'Content-Type': 'text/csv' }, data: 'a,b' } }, context(['127.0.0.1']));
    expect(receiver.requests.map((r) => [r.body, r.headers['content-type']])).toEqual([
      ['plain words', 'text/plain; charset=utf-8'],
      ['a,b', 'text/csv'],
    ]);
  });

  it('keeps only a capped excerpt of the response body', async () => {
    const outcome = await performSend({ kind: 'http', params: { method: 'GET', url: receiver.url('/big') } }, context(['127.0.0.1']));
    expect(outcome).toMatchObject({ ok: true, status: 200 });
    expect(outcome.responseExcerpt).toBe('x'.repeat(RESPONSE_EXCERPT_BYTES));
  });

  it('records an error status as a failed send with its status', async () => {
    const outcome = await performSend({ kind: 'http', params: { method: 'POST', url: receiver.url('/broken'), data: {} } }, context(['127.0.0.1']));
    expect(outcome).toMatchObject({ ok: false, status: 503, error: 'HTTP 503', responseExcerpt: 'down for maintenance' });
  });

  it('is refused by the egress guard without the component allow-list, and nothing reaches the receiver', async () => {
    const outcome = await performSend({ kind: 'http', params: { method: 'POST', url: receiver.url('/hook'), data: { secret: 1 } } }, context([]));
    expect(outcome.ok).toBe(false);
    expect(outcome.status).toBeUndefined();
    expect(outcome.error).toMatch(/egress to 127\.0\.0\.1 denied: .*loopback.*allow it with SLUICE_COMPONENT_EGRESS_ALLOW/);
    expect(receiver.requests).toHaveLength(0);
  });

  it('ends a send the receiver never answers at SLUICE_SEND_TIMEOUT_MS, as a failed send', async () => {
    const ctx = { ...context(['127.0.0.1']), sends: { timeoutMs: 300 } };
    const outcome = await performSend({ kind: 'http', params: { method: 'POST', url: receiver.url('/silent'), data: {} } }, ctx);
    expect(outcome).toMatchObject({ ok: false, error: 'http send: timed out after 300 ms' });
    expect(outcome.status).toBeUndefined();
    expect(receiver.requests.map((r) => r.url)).toEqual(['/silent']);
  });

  it("is refused when the allow-list does not cover the receiver's address", async () => {
    const outcome = await performSend({ kind: 'http', params: { method: 'GET', url: receiver.url('/hook') } }, context(['10.0.0.0/8']));
    expect(outcome).toMatchObject({ ok: false });
    expect(receiver.requests).toHaveLength(0);
  });

  it('re-checks what the guest validated: a bad method, URL or header fails without a request', async () => {
    const bad = [
      { method: 'GET POST', url: receiver.url('/hook') },
      { method: 'GET', url: 'not a url' },
      { method: 'GET', url: 'ftp://127.0.0.1/file' },
      { method: 'GET', url: receiver.url('/hook'), headers: { 'x-n': 5 as unknown as string } },
    ];
    for (const params of bad) {
      const outcome = await performSend({ kind: 'http', params }, context(['127.0.0.1']));
      expect(outcome.ok).toBe(false);
      expect(outcome.error).toMatch(/^http send: /);
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it('never records credentials or the query of the URL in the destination', async () => {
    const outcome = await performSend(
      { kind: 'http', params: { method: 'GET', url: `http://user:hunter2@127.0.0.1:${receiver.port}/hook?token=abc` } },
      context(['127.0.0.1']),
    );
    expect(outcome.ok).toBe(true);
    expect(outcome.destination).toBe(`GET http://127.0.0.1:${receiver.port}/hook`);
    expect(JSON.stringify(outcome)).not.toMatch(/hunter2|token=abc/);
  });
});

describe('performSend kinds it does not perform', () => {
  it('answers emit and sse with an error naming the workflow engine, and an unknown kind with the kinds it knows', async () => {
    const ctx = context([]);
    expect(await performSend({ kind: 'emit', params: { raw_event: {} } }, ctx)).toMatchObject({ kind: 'emit', ok: false, error: expect.stringMatching(/workflow engine/) });
    expect(await performSend({ kind: 'sse', params: { channel: 'c', payload: {} } }, ctx)).toMatchObject({ kind: 'sse', ok: false, error: expect.stringMatching(/workflow engine/) });
    const unknown = { kind: 'fax', params: {} } as unknown as Parameters<typeof performSend>[0];
    expect(await performSend(unknown, ctx)).toMatchObject({ ok: false, error: expect.stringMatching(/unknown send kind "fax"/) });
  });
});
