import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { PD, pdEnv, runPd } from './support/pd-cli';

const fixture = (name: string) => join(__dirname, 'fixtures', 'pd', name);
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `pd` in a pseudo-terminal: util-linux `script -qfec CMD /dev/null` gives the command a pty
 * (so process.stdin.isTTY is true), copies what we write to its input and what it prints to
 * our pipe. Each answer is written only once its question has appeared. `exec` leaves pd alone
 * in the terminal's process group, as when a user's shell starts it (a `sh -c` in between would
 * itself die of Ctrl-C).
 */
function inTerminal(args: string[], env: NodeJS.ProcessEnv) {
  const proc = spawn('script', ['-qfec', `exec ${[process.execPath, PD, ...args].map(quote).join(' ')}`, '/dev/null'], { env: { ...env, SHELL: '/bin/sh', TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  let seen = 0;
  const waiters: (() => void)[] = [];
  proc.stdout.on('data', (d) => {
    screen += d;
    waiters.splice(0).forEach((w) => w());
  });
  proc.stderr.on('data', (d) => (screen += d));
  const exited = new Promise<number | null>((r) => proc.on('close', (code) => {
    waiters.splice(0).forEach((w) => w());
    r(code);
  }));
  return {
    screen: () => screen,
    exited,
    /** Types raw text, e.g. Ctrl-C (`\x03`), which the terminal turns into SIGINT for pd. */
    type: (text: string) => proc.stdin.write(text),
    /** Resolves once `text` is on the screen. */
    waitFor: (text: string) => new Promise<void>((resolveSeen, reject) => {
      const check = () => {
        if (screen.includes(text)) return resolveSeen();
        if (proc.exitCode !== null) return reject(new Error(`pd ended before "${text}":\n${screen}`));
        waiters.push(check);
      };
      check();
    }),
    /** Waits for `question` after the previous one, then types `answer` and Enter. */
    async answer(question: string, answer: string): Promise<void> {
      await new Promise<void>((resolveSeen, reject) => {
        // A question that never comes fails with what the terminal showed, not a bare test timeout.
        const timer = setTimeout(() => reject(new Error(`pd did not ask "${question}" within 20 s:\n${screen}`)), 20_000);
        const check = () => {
          const at = screen.indexOf(question, seen);
          if (at >= 0) {
            seen = at + question.length;
            clearTimeout(timer);
            return resolveSeen();
          }
          if (proc.exitCode !== null) {
            clearTimeout(timer);
            return reject(new Error(`pd ended before asking "${question}":\n${screen}`));
          }
          waiters.push(check);
        };
        check();
      });
      proc.stdin.write(`${answer}\r`);
    },
  };
}

describe('pd deploy in a terminal asks for the required props', () => {
  let server: SluiceProcess;
  beforeAll(async () => {
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('asks for each unset required prop (options numbered, a wrong value asked again) and deploys with the answers', async () => {
    const term = inTerminal(['deploy', fixture('ticker.mjs'), '--name', 'Asked', '--prop', 'loud=false'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    await term.answer('timer [seconds or cron expression]: ', 'every day');
    await term.answer('timer [seconds or cron expression]: ', '*/10 * * * *');
    // `limit` has no options: the options endpoint (404 from a server without it, or no options) means free text.
    await term.answer('limit [integer]: ', 'ten');
    await term.answer('limit [integer]: ', '10');
    await term.answer('color [1-3 or a value]: ', '2');
    expect(await term.exited).toBe(0);
    const screen = term.screen();
    expect(screen).toContain('timer takes a number of seconds (60) or a cron expression');
    expect(screen).toContain('limit takes an integer, got "ten"');
    expect(screen).toMatch(/1\) red\r?\n {2}2\) green\r?\n {2}3\) blue/);
    const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
    expect(sources).toEqual([expect.objectContaining({
      name: 'Asked',
      configured_props: { timer: { cron: '*/10 * * * *', interval_seconds: null, timezone: null }, limit: 10, color: 'green', loud: false },
    })]);
  });

  it('offers async options from the component: page after page with m, and a search for a useQuery prop', async () => {
    const term = inTerminal(['deploy', fixture('fruit-picker.mjs'), '--name', 'Picked'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    await term.answer('fruit [1-3 or a value, m for more]: ', 'm');
    await term.answer('fruit [1-6 or a value, m for more]: ', 'm');
    await term.answer('fruit [1-7 or a value, m for more]: ', 'm');
    await term.answer('fruit [1-7 or a value]: ', '6');
    await term.answer('berry: search for: ', 'rasp');
    await term.answer('berry [1-1 or a value, m for more]: ', '1');
    expect(await term.exited).toBe(0);
    const screen = term.screen();
    expect(screen).toMatch(/1\) APPLE\r?\n {2}2\) BANANA\r?\n {2}3\) CHERRY/);
    expect(screen).toMatch(/4\) DAMSON[\s\S]*7\) GRAPE/);
    expect(screen).toContain('no more options');
    expect(screen).not.toContain('blueberry');
    const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
    expect(sources).toContainEqual(expect.objectContaining({ name: 'Picked', configured_props: { fruit: 'fig', berry: 'raspberry' } }));
  });

  it('does not echo a secret prop typed at the prompt', async () => {
    const term = inTerminal(['deploy', fixture('vault.mjs'), '--name', 'Vault'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    await term.answer('token [secret, not shown]: ', 'hunter2-secret');
    expect(await term.exited).toBe(0);
    expect(term.screen()).not.toContain('hunter2');
    const rest = api(server.url, server.apiKey);
    const vault = (await rest.get('/v1/users/me/sources')).body.data.find((s: { name: string }) => s.name === 'Vault');
    const ran = await rest.post(`/v1/sources/${vault.id}/run`);
    expect(ran.body.data.emitted[0].event).toEqual({ length: 14, starts: 'h' });
  });

  it('asks nothing for props given on the command line', async () => {
    const term = inTerminal(['deploy', fixture('ticker.mjs'), '--name', 'Given', '--prop', 'timer=60', '--prop', 'limit=1', '--prop', 'color=red'], pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey }));
    expect(await term.exited).toBe(0);
    expect(term.screen()).not.toContain('[');
    const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
    expect(sources).toContainEqual(expect.objectContaining({ name: 'Given', configured_props: expect.objectContaining({ limit: 1, color: 'red' }) }));
  });

  it('Ctrl-C in the terminal stops pd events -f and pd dev cleanly (exit 0; the dev source stays deployed)', async () => {
    const env = pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey });
    expect((await runPd(['deploy', fixture('greeter.mjs'), '--name', 'Followed', '--prop', 'greeting=f'], env)).code).toBe(0);
    const follow = inTerminal(['events', 'Followed', '-f'], env);
    await follow.waitFor('following events of');
    follow.type('\x03');
    expect(await follow.exited).toBe(0);

    const dev = inTerminal(['dev', fixture('greeter.mjs'), '--name', 'Dev In Terminal', '--prop', 'greeting=t'], env);
    await dev.waitFor('Ctrl-C stops watching');
    dev.type('\x03');
    expect(await dev.exited).toBe(0);
    expect(dev.screen()).toMatch(/stopped; dc_\w+ stays deployed/);
    const sources = (await api(server.url, server.apiKey).get('/v1/users/me/sources')).body.data;
    expect(sources).toContainEqual(expect.objectContaining({ name: 'Dev In Terminal', active: true }));
  });

  it('pd login in a terminal asks for the key without echoing it and saves it; pd whoami reads it back', async () => {
    const xdg = mkdtempSync(join(tmpdir(), 'pd-login-'));
    try {
      const env = pdEnv({ XDG_CONFIG_HOME: xdg });
      const term = inTerminal(['login', '--url', server.url], env);
      await term.answer(`API key for ${server.url} (not shown): `, server.apiKey);
      expect(await term.exited).toBe(0);
      expect(term.screen()).not.toContain(server.apiKey);
      expect(readFileSync(join(xdg, 'sluice', 'config'), 'utf8')).toContain(`api_key = ${server.apiKey}`);
      const who = await runPd(['whoami', '--json'], env);
      expect(JSON.parse(who.stdout)).toMatchObject({ id: expect.stringMatching(/^u_/), base_url: server.url });
    } finally {
      rmSync(xdg, { recursive: true, force: true });
    }
  });
});
