import type { SendsConfig } from '@app/config';
import { closeIdleOutboundConnections } from '@app/delivery';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { LoopbackServer, ReceivedRequest, startLoopbackServer } from '../../delivery/test/loopback-server.helper';
import { performSend, SendContext } from '../src';

const AT = Date.UTC(2026, 10, 23, 12, 34, 56, 789);
const STAMP = '2026-11-23T12-34-56-789Z';

describe('performSend s3', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-sends-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => closeIdleOutboundConnections());

  function context(sends: SendsConfig, extra: Partial<SendContext> = {}): SendContext {
    return { dataDir, componentEgressAllow: [], sends, sendId: 'run_7-archive-0', now: () => AT, ...extra };
  }

  describe('against s3rver (a real S3-compatible server in this process)', () => {
    let server: S3rver;
    let endpoint: string;
    let s3Dir: string;
    beforeAll(async () => {
      s3Dir = mkdtempSync(join(tmpdir(), 'sluice-s3rver-'));
      server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: 'archive', configs: [] }] });
      const { port } = await server.run();
      endpoint = `http://127.0.0.1:${port}`;
    });
    afterAll(async () => {
      await server.close();
      rmSync(s3Dir, { recursive: true, force: true });
    });

    // s3rver's default account; it checks the access key but does not verify V4 signatures
    // (the loopback test below does).
    const s3 = () => ({ endpoint, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', region: 'us-east-1' });

    it('PUTs the payload as JSON under <prefix><timestamp>-<id>.json, readable back from the server', async () => {
      const payload = { order: 42, items: ['a', 'b'], note: 'ünïcode ✓' };
      const outcome = await performSend({ kind: 's3', params: { bucket: 'archive', prefix: 'orders/2026/', payload } }, context({ timeoutMs: 10_000, s3: s3() }));
      const key = `orders/2026/${STAMP}-run_7-archive-0.json`;
      expect(outcome).toMatchObject({ kind: 's3', ok: true, status: 200, destination: `s3://archive/${key} at ${endpoint}`, at: AT });
      const stored = await fetch(`${endpoint}/archive/${key}`);
      expect(stored.status).toBe(200);
      expect(await stored.json()).toEqual(payload);
      expect(() => readdirSync(join(dataDir, 'outbox'))).toThrow(/ENOENT/);
    });

    it('encodes keys with spaces and reserved characters so that the object gets exactly that key', async () => {
      const outcome = await performSend({ kind: 's3', params: { bucket: 'archive', prefix: 'odd keys/a+b (1)/', payload: 1 } }, context({ timeoutMs: 10_000, s3: s3() }));
      expect(outcome).toMatchObject({ ok: true, status: 200 });
      const listed = await (await fetch(`${endpoint}/archive?prefix=${encodeURIComponent('odd keys/')}`)).text();
      expect(listed).toContain(`<Key>odd keys/a+b (1)/${STAMP}-run_7-archive-0.json</Key>`);
    });

    it('records the S3 error of a missing bucket', async () => {
      const outcome = await performSend({ kind: 's3', params: { bucket: 'no-such-bucket', prefix: '', payload: {} } }, context({ timeoutMs: 10_000, s3: s3() }));
      expect(outcome).toMatchObject({ ok: false, status: 404, error: 's3 send: HTTP 404 (NoSuchBucket)' });
    });

    it('records a refused access key', async () => {
      const outcome = await performSend(
        { kind: 's3', params: { bucket: 'archive', prefix: '', payload: {} } },
        context({ timeoutMs: 10_000, s3: { ...s3(), accessKeyId: 'NOBODY' } }),
      );
      expect(outcome).toMatchObject({ ok: false, status: 403, error: 's3 send: HTTP 403 (InvalidAccessKeyId)' });
    });
  });

  describe('the signature, checked by a loopback server', () => {
    let receiver: LoopbackServer;
    beforeAll(async () => {
      receiver = await startLoopbackServer((_req, res) => res.end());
    });
    afterAll(() => receiver.close());

    it('signs the path-style PUT with AWS Signature V4 over the exact path, headers and body', async () => {
      const s3 = { endpoint: receiver.url('/base'), accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG', region: 'eu-west-3' };
      const outcome = await performSend({ kind: 's3', params: { bucket: 'logs.bucket', prefix: 'a b/', payload: { x: 1 } } }, context({ timeoutMs: 10_000, s3 }));
      expect(outcome).toMatchObject({ ok: true, status: 200 });
      expect(receiver.requests).toHaveLength(1);
      const [request] = receiver.requests;
      expect(request).toMatchObject({ method: 'PUT', url: `/base/logs.bucket/a%20b/${STAMP}-run_7-archive-0.json`, body: '{"x":1}' });
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['x-amz-content-sha256']).toBe(sha256('{"x":1}'));
      const authorization = String(request.headers.authorization);
      expect(authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-3\/s3\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
      );
      expect(authorization).toContain(`Signature=${expectedSignature(request, s3.secretAccessKey, 'eu-west-3')}`);
    });
  });

  describe('without SLUICE_S3_ENDPOINT', () => {
    it('writes the payload to <data dir>/outbox/s3/<bucket>/<prefix><timestamp>-<id>.json, private', async () => {
      const outcome = await performSend({ kind: 's3', params: { bucket: 'archive', prefix: 'daily/report-', payload: { ok: true } } }, context({ timeoutMs: 10_000 }));
      const relative = `outbox/s3/archive/daily/report-${STAMP}-run_7-archive-0.json`;
      expect(outcome).toMatchObject({ kind: 's3', ok: true, destination: relative });
      expect(outcome.status).toBeUndefined();
      expect(JSON.parse(readFileSync(join(dataDir, relative), 'utf8'))).toEqual({ ok: true });
      expect(statSync(join(dataDir, relative)).mode & 0o777).toBe(0o600);
      expect(readdirSync(join(dataDir, 'outbox/s3/archive/daily'))).toEqual([`report-${STAMP}-run_7-archive-0.json`]);
    });

    it('keeps a prefix that tries to climb out inside the outbox', async () => {
      const outcome = await performSend({ kind: 's3', params: { bucket: 'archive', prefix: '../../../escape/', payload: 1 } }, context({ timeoutMs: 10_000 }));
      expect(outcome.ok).toBe(true);
      expect(outcome.destination).toBe(`outbox/s3/archive/%2E%2E/%2E%2E/%2E%2E/escape/${STAMP}-run_7-archive-0.json`);
      expect(readdirSync(dataDir)).toEqual(['outbox']);
    });

    it('refuses a bucket that is not an S3 bucket name', async () => {
      for (const bucket of ['..', 'a/b', 'UPPER', 'x', '../etc']) {
        const outcome = await performSend({ kind: 's3', params: { bucket, prefix: '', payload: 1 } }, context({ timeoutMs: 10_000 }));
        expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/^s3 send: bucket/) });
      }
      expect(readdirSync(dataDir)).toEqual([]);
    });
  });
});

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: Buffer | string, text: string): Buffer {
  return createHmac('sha256', key).update(text).digest();
}

/**
 * The test's own SigV4 computation (AWS's documented algorithm, written from the spec), so
 * that the header is verified independently of the signing library.
 */
function expectedSignature(request: ReceivedRequest, secret: string, region: string): string {
  const authorization = String(request.headers.authorization);
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)![1].split(';');
  const amzDate = String(request.headers['x-amz-date']);
  const day = amzDate.slice(0, 8);
  const [path, query = ''] = request.url.split('?');
  const canonicalHeaders = signedHeaders.map((name) => `${name}:${String(request.headers[name]).trim()}\n`).join('');
  const canonicalRequest = [request.method, path, query, canonicalHeaders, signedHeaders.join(';'), String(request.headers['x-amz-content-sha256'])].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), 's3'), 'aws4_request');
  return hmac(key, stringToSign).toString('hex');
}
