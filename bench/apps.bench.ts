import { startBenchServer } from './bench-server';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * What a connected account costs a run: warm custom-response invocations of the same trivial
 * component, without an app prop and with a key app prop whose `$auth` the run reads (the
 * seam looks the account up and opens its sealed credentials on every invocation).
 */
export async function benchApps(log: (s: string) => void): Promise<void> {
  const server = await startBenchServer();
  try {
    const code = (withApp: boolean) => `
      const chat = { type: "app", app: "rocketchat", methods: { user() { return this.$auth.user_id; } } };
      export default { name: "a", version: "1",
        props: { ${withApp ? 'chat, ' : ''}http: { type: "$.interface.http", customResponse: true } },
        run() { this.http.respond({ status: 200, body: ${withApp ? 'this.chat.user()' : '"plain"'} }); } }`;
    const acct = await server.post('/v1/accounts', { app: 'rocketchat', name: 'bench', credentials: { url: 'https://chat.example', user_id: 'u1', auth_token: 'secret-token' } });
    const plain = await server.post('/v1/sources', { component_code: code(false) });
    const withApp = await server.post('/v1/sources', { component_code: code(true), configured_props: { chat: { authProvisionId: acct.id } } });
    const roundTrips = async (url: string, n: number): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const r = await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
        await r.text();
      }
      return (performance.now() - t0) / n;
    };
    // Warm both isolates, then alternate rounds so drift on a shared machine hits both alike.
    await roundTrips(plain.endpoint_url, 50);
    await roundTrips(withApp.endpoint_url, 50);
    const a: number[] = [];
    const b: number[] = [];
    for (let round = 0; round < 5; round++) {
      a.push(await roundTrips(plain.endpoint_url, 300));
      b.push(await roundTrips(withApp.endpoint_url, 300));
    }
    log(`  custom-response round trip, no app prop (median of 5 x 300): ${median(a).toFixed(3)} ms`);
    log(`  the same with a key app prop resolved to $auth: ${median(b).toFixed(3)} ms`);
  } finally {
    await server.stop();
  }
}
