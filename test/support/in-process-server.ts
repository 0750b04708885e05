import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { RunningServer, startServer } from '../../src/server';
import { eventually } from './sluice-process';

/** A source that emits everything its run saw of the request. */
export const MIRROR_SOURCE = `export default { name: "mirror", version: "1", props: { http: { type: "$.interface.http" } },
  run(event) { this.$emit(event); } }`;

/** A Sluice server started in the test's own process (`startServer`) on a data dir of its own, on a free loopback port. */
export class InProcessServer {
  server!: RunningServer;
  port = 0;
  private dataDir = '';
  private stopped: Promise<void> | undefined;

  constructor(private readonly apiKey = 'sk_test_in_process_0123456789') {}

  async start(env: Record<string, string> = {}): Promise<void> {
    this.dataDir = mkdtempSync(join(tmpdir(), 'sluice-in-process-'));
    this.server = await startServer(loadConfig({ SLUICE_DATA_DIR: this.dataDir, SLUICE_API_KEY: this.apiKey, PORT: '0', HOST: '127.0.0.1', ...env }));
    this.port = Number(new URL(this.server.url).port);
  }

  /** Stops the server (once, however often it is called) and removes its data. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await this.server?.close();
      rmSync(this.dataDir, { recursive: true, force: true });
    })();
    return this.stopped;
  }

  /** An API call that must answer 200: its `data`. */
  async api(method: string, path: string, body?: unknown): Promise<any> {
    const r = await fetch(`${this.server.url}${path}`, {
      method, headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.json()) as { data: any };
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
    return json.data;
  }

  /** Deploys a source; its id and endpoint key. */
  async deploy(code: string, props: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
    const d = await this.api('POST', '/v1/sources', { component_code: code, configured_props: props });
    return { id: d.id, key: new URL(d.endpoint_url).pathname.split('/')[2] };
  }

  /** A source's emitted events (up to 100), oldest first, once there are at least `atLeast`. */
  async emitted(sourceId: string, atLeast: number): Promise<Record<string, any>[]> {
    return (await eventually(async () => {
      const d = (await this.api('GET', `/v1/sources/${sourceId}/event_summaries?expand=event&limit=100`)) as { event: Record<string, any> }[];
      return d.length >= atLeast ? d.map((e) => e.event).reverse() : undefined;
    }, 20_000, `${atLeast} events of ${sourceId}`))!;
  }
}
