import { createServer, request, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EndpointAnswer, writeEndpointAnswer } from './endpoint-answer';

describe('writeEndpointAnswer', () => {
  let server: Server;
  let url = '';
  let next: EndpointAnswer = { status: 200, json: null };

  beforeAll(async () => {
    server = createServer((_req, res) => writeEndpointAnswer(res, next));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  function get(answer: EndpointAnswer): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
    next = answer;
    return new Promise((resolve, reject) => {
      request(url, { agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      }).on('error', reject).end();
    });
  }

  it('types JSON, text and bytes unless the answer names a type, and frames the body', async () => {
    expect(await get({ status: 201, json: { ok: true } })).toMatchObject({
      status: 201, headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': '11' }, body: '{"ok":true}',
    });
    expect(await get({ status: 200, raw: 'héllo' })).toMatchObject({ headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': '6' }, body: 'héllo' });
    expect(await get({ status: 200, raw: Buffer.from('ab') })).toMatchObject({ headers: { 'content-type': 'application/octet-stream', 'content-length': '2' } });
    expect(await get({ status: 200, headers: { 'Content-Type': 'application/json' }, raw: '[1]' })).toMatchObject({ headers: { 'content-type': 'application/json' }, body: '[1]' });
  });

  it('sends a 204 without a body, a type or a length', async () => {
    const r = await get({ status: 204, headers: { 'content-type': 'text/plain' }, raw: 'dropped' });
    expect(r.status).toBe(204);
    expect(r.body).toBe('');
    expect(r.headers).not.toHaveProperty('content-type');
    expect(r.headers).not.toHaveProperty('content-length');
  });

  it('drops the connection instead of throwing when a header cannot be written', async () => {
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      await expect(get({ status: 200, headers: { 'x-bad': 'a\r\nb' }, raw: 'x' })).rejects.toThrow(/socket hang up|ECONNRESET/);
      expect(logged).toHaveBeenCalledWith('sluice: an endpoint answer could not be written', expect.objectContaining({ message: expect.stringMatching(/header/) }));
    } finally {
      logged.mockRestore();
    }
    // The server still answers.
    expect((await get({ status: 200, json: 1 })).body).toBe('1');
  });
});
