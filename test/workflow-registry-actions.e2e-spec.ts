import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const FIXTURES = join(__dirname, 'fixtures', 'actions');

/**
 * The action fixtures that `POST /v1/actions/run` runs (test/actions.e2e-spec.ts), published and
 * used by key as the steps of one HTTP workflow: a transformation, an early exit, a custom
 * response whose text refers to an export, and a `$.send.http` of an earlier step's value.
 */
describe('published actions as workflow steps, by key', () => {
  let server: SluiceProcess;
  let receiver: Server;
  const received: { body: unknown; sentBy: unknown }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ body: JSON.parse(Buffer.concat(chunks).toString() || 'null'), sentBy: req.headers['x-sent-by'] });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
  });
  afterAll(async () => {
    await server?.stop();
    await new Promise((r) => receiver.close(r));
    if (server) removeDataDir(server.dataDir);
  });

  it('transform -> exit unless items -> respond with an export -> $.send.http of a return value; an empty request exits before responding', async () => {
    const client = api(server.url, server.apiKey);
    for (const f of ['transform-records', 'exit-early', 'custom-response', 'send-http']) {
      const saved = await client.post('/v1/components', { component_code: readFileSync(join(FIXTURES, `${f}.mjs`), 'utf8'), publish: true });
      expect(saved.status).toBe(200);
    }
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/notify`;
    const created = await client.post('/v1/workflows', {
      name: 'Registry steps',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'pick', key: 'sluice-fixtures-transform-records', configured_props: { records: '{{steps.trigger.event.body.records}}', field: 'name' } },
        { name: 'check', key: 'sluice-fixtures-exit-early', configured_props: { items: '{{steps.pick.$return_value.values}}' } },
        { name: 'reply', key: 'sluice-fixtures-custom-response@0.1.0', configured_props: { message: 'picked {{steps.pick.count}}: {{steps.pick.$return_value.joined}}' } },
        { name: 'notify', key: 'sluice-fixtures-send-http', configured_props: { url: receiverUrl, payload: '{{steps.pick.$return_value.values}}' } },
      ],
    });
    expect(created.status).toBe(200);
    const wf = created.body.data as { id: string; trigger: { endpoint_url: string } };

    const answer = await fetch(wf.trigger.endpoint_url, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ name: 'ada' }, { name: 'bob' }, { other: 1 }] }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-responded-by')).toBe('sluice-fixture');
    expect(await answer.json()).toEqual({ message: 'picked 2: ada,bob' });
    await eventually(() => received.length === 1, 20_000, 'the notify step\'s send');
    expect(received[0]).toEqual({ body: ['ada', 'bob'], sentBy: 'sluice-fixture' });

    const empty = await fetch(wf.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [] }) });
    expect(empty.status).toBe(502);
    expect(await empty.json()).toMatchObject({ code: 'no_response' });

    const runs = await eventually(async () => {
      const data = (await client.get(`/v1/workflows/${wf.id}/runs`)).body.data as { status: string }[];
      return data.length === 2 && data.every((r) => r.status !== 'running') ? data : undefined;
    }, 20_000, 'two ended runs');
    const [exited, succeeded] = runs as unknown as { status: string; exit_reason: string | null; steps: { name: string; status: string; exports: Record<string, unknown> }[] }[];
    expect(succeeded.status).toBe('succeeded');
    expect(succeeded.steps.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(succeeded.steps[0].exports).toMatchObject({ count: 2 });
    expect(exited).toMatchObject({ status: 'exited', exit_reason: 'no items to process' });
    expect(exited.steps.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'skipped', 'skipped']);
    // The exited run sent nothing.
    expect(received).toHaveLength(1);
  });
});
