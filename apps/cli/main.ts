import { loadConfig } from '@app/config';
import type { SluiceConfig } from '@app/config';
import { randomToken } from '@app/domain';
import { SluiceEngine, lockDataDir } from '@app/engine';
import { deploy, events, logs, publish, runAction, sources } from './pd-client';

const USAGE = `usage: npm run pd -- <command> [options]
client commands (talk to a running server: SLUICE_URL, SLUICE_API_KEY or ./data/api-key):
  deploy <file | url | key> [--name NAME]   deploy a source (a file is bundled with its relative imports)
  publish <file>                             publish a component to the account's registry; prints key@version
  run <action key[@version] | file> [--prop NAME=VALUE ...]
                                             run an action once; prints ret, exports, summary and logs (os)
  sources                                    list deployed sources
  events <source id or name> [-n N]          the last N emitted events (default 10)
  logs <source id or name>                   recent runs and hooks with their logs
admin commands (stop the server first; use SLUICE_DATA_DIR):
  create-account [--name NAME] [--key KEY]   create an account and print its API key
  rebuild                                    drop every read model and rebuild it from the log`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Every value of a repeated option (`--prop a=1 --prop b=2`). */
function options(args: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < args.length - 1; i++) if (args[i] === `--${name}`) values.push(args[++i]);
  return values;
}

/** Client commands talk to a server; admin commands lock the data directory. */
async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));
  if (command === 'deploy' && args[0]) {
    print(await deploy(args[0], option(args, 'name')));
    return 0;
  }
  if (command === 'publish' && args[0]) {
    const published = await publish(args[0]);
    for (const w of published.warnings as { field: string; message: string }[]) console.error(`warning: ${w.field} ${w.message}`);
    // Plain text, so that `pd run $(pd publish action.mjs)` works.
    console.log(published.published);
    return 0;
  }
  if (command === 'run' && args[0]) {
    const answer = await runAction(args[0], options(args, 'prop'));
    print(answer);
    // The answer is printed either way; a failed run is a failed command.
    return answer.ok === false ? 1 : 0;
  }
  if (command === 'sources') {
    print(await sources());
    return 0;
  }
  if (command === 'events' && args[0]) {
    print(await events(args[0], Number(option(args, 'n') ?? (args.includes('-n') ? args[args.indexOf('-n') + 1] : 10))));
    return 0;
  }
  if (command === 'logs' && args[0]) {
    print(await logs(args[0]));
    return 0;
  }
  if (command !== 'create-account' && command !== 'rebuild') {
    console.error(USAGE);
    return command ? 2 : 0;
  }
  const config = loadConfig();
  // Held for the whole command: no server (nor another admin command) can start meanwhile.
  const lock = lockDataDir(config.dataDir);
  try {
    return await admin(command, args, config);
  } finally {
    lock.release();
  }
}

/** Admin commands that work on the data directory directly; the caller holds its lock. */
async function admin(command: 'create-account' | 'rebuild', args: string[], config: SluiceConfig): Promise<number> {
  if (command === 'create-account') {
    const engine = new SluiceEngine(config, { sandbox: false });
    await engine.startReadModels();
    const key = option(args, 'key') ?? `sk_${randomToken(24)}`;
    let accountId: string;
    try {
      accountId = await engine.accounts.create(option(args, 'name') ?? 'account', key);
    } finally {
      await engine.stop();
    }
    console.log(JSON.stringify({ account_id: accountId, api_key: key }));
    return 0;
  }
  const engine = new SluiceEngine(config, { sandbox: false });
  const started = Date.now();
  let head: bigint;
  try {
    head = await engine.rebuildReadModels();
  } finally {
    await engine.stop();
  }
  console.log(JSON.stringify({ rebuilt: true, events: Number(head), ms: Date.now() - started }));
  return 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  console.error(`pd: ${(err as Error).message}`);
  process.exit(1);
});
