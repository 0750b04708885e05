import { checkGuestResponse } from './guest-http-response';

describe('checkGuestResponse (the host re-checks what a possibly tampered guest runtime produced)', () => {
  it('drops hop-by-hop and framing headers in any case, keeps the rest', () => {
    const checked = checkGuestResponse({
      status: 200,
      headers: {
        'Transfer-Encoding': 'chunked', 'content-length': '999', Connection: 'close', 'keep-alive': 'timeout=5', te: 'trailers',
        trailer: 'x-t', upgrade: 'h2c', 'proxy-connection': 'keep-alive', 'x-kept': 'yes', 'content-type': 'text/plain',
      },
      body: 'hi',
    });
    expect(checked).toEqual({ ok: true, status: 200, headers: { 'x-kept': 'yes', 'content-type': 'text/plain' }, body: 'hi' });
  });

  it.each([100, 101, 103, 199, 600, 99, 200.5])('refuses status %p', (status) => {
    const checked = checkGuestResponse({ status, headers: {} });
    expect(checked).toEqual({ ok: false, problem: expect.stringContaining(`status ${status}`) });
  });

  it.each([
    ['x-a\r\nx-injected', 'v', /header name "x-a\\r\\nx-injected" is not a valid HTTP field name/],
    ['x a', 'v', /header name "x a"/],
    ['', 'v', /header name ""/],
    ['x-a', 'one\r\nSet-Cookie: stolen=1', /header "x-a" has a value with a control character/],
    ['x-a', 'nul\u0000', /header "x-a"/],
    ['x-a', 'lf\n', /header "x-a"/],
    ['x-a', 'wide \u2028', /header "x-a"/],
  ])('refuses header %j: %j, naming it on one line without the value', (name, value, problem) => {
    const checked = checkGuestResponse({ status: 200, headers: { [name]: value } });
    expect(checked.ok).toBe(false);
    const text = (checked as { problem: string }).problem;
    expect(text).toMatch(problem);
    expect(text).not.toMatch(/[\r\n\u0000]/);
    expect(text).not.toContain('stolen');
  });

  it('sends bytes as a Buffer and a missing body as empty text', () => {
    expect(checkGuestResponse({ status: 202, headers: {}, bodyBase64: Buffer.from([0, 255]).toString('base64') })).toMatchObject({ body: Buffer.from([0, 255]) });
    expect(checkGuestResponse({ status: 204, headers: {} })).toMatchObject({ ok: true, body: '' });
  });
});
