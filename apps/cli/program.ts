import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CliError } from './cli-error';
import { runDev } from './dev-mode';
import type { SavedComponent } from './pd-client';
import { login, whoami } from './commands/account-commands';
import { init, publish, runAction, runs, unpublish } from './commands/component-commands';
import { context, interruptSignal, type GlobalOptions } from './commands/context';
import { list, listKind, LISTS } from './commands/list-commands';
import { deploy, describe, events, logs, propsForDeploy, remove, update } from './commands/source-commands';
import { createWebhook, subscribe, unsubscribe } from './commands/webhook-commands';
import { details, printJson, printText } from './output';

/** Printed by `pd help` and `pd --help`: what scripts can rely on. */
export const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  the command failed: the server refused it (the line says why), a run failed, a name matched nothing
  2  usage error: bad or missing arguments, a missing local file, a required prop left unset
  3  the server could not be reached
  4  no API key, or the server refused the key

Configuration: ${'$'}XDG_CONFIG_HOME/sluice/config (default ~/.config/sluice/config), written by pd login;
SLUICE_API_KEY and SLUICE_URL override it; --profile NAME (or SLUICE_PROFILE) picks a profile.
Output is for people; --json gives JSON for scripts (one JSON value per line when following).`;

/** The version in package.json (dist/apps/cli is three levels below it); `unknown` if it cannot be read. */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `-n` of `pd events` and `pd runs`: an integer from 1 to 100. */
function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new InvalidArgumentError('must be an integer from 1 to 100.');
  return n;
}

/**
 * The `pd` program: every command with its options and help. A command that ends with an exit
 * code other than 0 without an error (a failed `pd run`) reports it through `setExit`; errors
 * are thrown (CliError, ServerError) and turned into one line and their exit code by main.
 */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('pd');
  program
    .version(packageVersion(), '-V, --version', 'print pd\'s version')
    .description('The Sluice command-line client: deploy and develop sources, follow their events and logs, wire webhooks.')
    .option('--profile <name>', 'use this profile of the config file')
    .option('--json', 'print JSON for scripts instead of tables')
    .showSuggestionAfterError(true)
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride()
    // One line per usage error (a suggestion joins it), as for every other error.
    .configureOutput({ outputError: (text, write) => write(`${text.trim().split('\n').join(' ')}\n`) });

  program.command('login').description('save an API key (asked for, or --api-key) and server URL into a profile of the config file')
    .option('--api-key <key>', 'the key (else asked for on the terminal)')
    .option('--url <url>', 'the server (default: SLUICE_URL, the profile\'s, or http://127.0.0.1:8080)')
    .action((opts, cmd: Command) => login(cmd, opts));

  program.command('whoami').description('the account of the configured key, and where the key came from')
    .action((_opts, cmd: Command) => whoami(context(cmd)));

  program.command('list').alias('ls').argument('<what>', `one of ${Object.keys(LISTS).join(', ')} (or src, wf, wh, sub, comp, acct)`)
    .description('list sources, workflows, webhooks, subscriptions, components (the registry) or connected accounts')
    .action((what: string, _opts, cmd: Command) => {
      const kind = listKind(what);
      return list(context(cmd), kind);
    });
  for (const kind of ['sources', 'workflows', 'subscriptions', 'components', 'accounts']) {
    program.command(kind).description(`same as pd list ${kind}`).action((_opts, cmd: Command) => list(context(cmd), kind));
  }

  program.command('describe').argument('<name>', 'id, name slug or display name').description('show one source, workflow, webhook or component in full')
    .addOption(new Option('--type <kind>', 'what the name is, when it names several kinds').choices(['source', 'workflow', 'webhook', 'component']))
    .action((ref: string, opts, cmd: Command) => describe(context(cmd), ref, opts));

  const propOptions = (c: Command) => c
    .option('--prop <name=value>', 'a configured prop, typed by the component (repeatable); a timer takes seconds or a cron string', collect, [])
    .option('--props <file.json>', 'configured props from a JSON file (--prop wins)');

  propOptions(program.command('deploy').argument('<target>', 'a file (bundled with its relative imports), a registry key[@version] or a URL to raw code')
    .description('deploy a source; required props are asked for on a terminal, refused otherwise')
    .option('--name <name>', 'the source\'s name')
    .option('--inactive', 'deploy it deactivated'))
    .action((target: string, opts, cmd: Command) => deploy(context(cmd), target, { ...opts, active: opts.inactive ? false : undefined }));

  propOptions(program.command('dev').argument('<file>', 'the source file').description('deploy a source file (or attach to --dc), then update it on every save of the file or a file it imports, streaming its logs and events; Ctrl-C leaves it deployed')
    .option('--dc <source>', 'attach to this deployed source instead of deploying a new one')
    .option('--name <name>', 'the new source\'s name'))
    .action((file: string, opts, cmd: Command) => {
      const ctx = context(cmd);
      return runDev(ctx.api, file, interruptSignal(), { ...opts, json: ctx.json, propsForDeploy: (c: SavedComponent) => propsForDeploy(ctx, c, opts) });
    });

  propOptions(program.command('update').argument('<source>', 'id, name slug or display name').description('change a deployed source; it keeps its id')
    .option('--code <file | key | url>', 'new code')
    .option('--name <name>', 'new name')
    .option('--activate', 'activate it')
    .option('--deactivate', 'deactivate it'))
    .action((ref: string, opts, cmd: Command) => update(context(cmd), ref, opts));

  program.command('delete').alias('rm').argument('<name>', 'a source, workflow or webhook: id, name slug or display name').description('delete a source, workflow or webhook')
    .addOption(new Option('--type <kind>', 'what the name is, when it names several kinds').choices(['source', 'workflow', 'webhook']))
    .option('--ignore-hook-errors', 'delete a source even if its deactivate hook fails')
    .action((ref: string, opts, cmd: Command) => remove(context(cmd), ref, opts));

  program.command('publish').argument('<file>', 'an action or source file').description('publish a component into the account\'s registry; prints key@version')
    .action((file: string, _opts, cmd: Command) => publish(context(cmd), file));
  program.command('unpublish').argument('<key[@version]>').description('remove a published component (one version, or every version of the key) from the account\'s registry')
    .action((key: string, _opts, cmd: Command) => unpublish(context(cmd), key));

  propOptions(program.command('run').argument('<action>', 'an action key[@version] or file').description('run an action once; prints ret, exports, summary and logs as JSON (exit 1 when the run failed)'))
    .action(async (target: string, opts, cmd: Command) => setExit(await runAction(context(cmd), target, opts)));

  program.command('runs').argument('<workflow>', 'id, name slug or display name').description('the last runs of a workflow, each step\'s status')
    .option('-n <count>', 'how many (1 to 100)', count, 10)
    .action((ref: string, opts, cmd: Command) => runs(context(cmd), ref, { n: opts.n }));

  program.command('logs').argument('<source>', 'id, name slug or display name').description('a source\'s recent runs and hooks with their logs, oldest first')
    .option('-f, --follow', 'keep printing new ones')
    .action((ref: string, opts, cmd: Command) => logs(context(cmd), ref, opts));

  program.command('events').argument('<source>', 'id, name slug or display name').description('a source\'s last emitted events (oldest first; --json: newest first)')
    .option('-n <count>', 'how many (1 to 100)', count, 10)
    .option('-f, --follow', 'keep printing new ones')
    .option('--event-name <channel>', 'only this channel ($errors, ...)')
    .action((ref: string, opts, cmd: Command) => events(context(cmd), ref, { n: opts.n, follow: opts.follow, eventName: opts.eventName }));

  program.command('init').argument('<kind>', 'source, action or app').argument('<name>', 'the component\'s name')
    .description('write a component file from a template that deploys as it is')
    .option('--http', 'source: an HTTP endpoint (the default)')
    .option('--timer', 'source: a timer (every 15 minutes)')
    .option('--db', 'source: a key-value store kept between runs')
    .option('--dir <dir>', 'where to write it', '.')
    .option('--force', 'overwrite an existing file')
    .action((kind: string, name: string, opts, cmd: Command) => {
      if (!['source', 'action', 'app'].includes(kind)) throw CliError.usage(`pd init takes source, action or app; got "${kind}"`);
      init(kind, name, { ...opts, json: cmd.optsWithGlobals<GlobalOptions>().json });
    });

  const webhooks = program.command('webhooks').alias('webhook').description('list, create and delete webhooks (spec 4.5)');
  webhooks.command('list', { isDefault: true }).description('list webhooks').action((_opts, cmd: Command) => list(context(cmd), 'webhooks'));
  webhooks.command('create').argument('<url>', 'where events are delivered').description('create a webhook; prints its id and signing secret')
    .option('--name <name>', 'its name (default: the URL\'s host)')
    .option('--description <text>', 'its description')
    .action(async (url: string, opts, cmd: Command) => {
      const ctx = context(cmd);
      const hook = await createWebhook(ctx, url, opts);
      if (ctx.json) return printJson(hook);
      printText(details([['id', hook.id], ['name', hook.name], ['url', hook.url], ['signing secret', hook.signing_secret]]));
    });
  webhooks.command('delete').argument('<webhook>', 'id or name').description('delete a webhook and its subscriptions')
    .action((ref: string, _opts, cmd: Command) => remove(context(cmd), ref, { type: 'webhook' }));

  program.command('subscribe').argument('<emitter>', 'a source or workflow (id, slug or name), or dc_* / p_*')
    .argument('<listener>', 'a webhook (id or name) or a URL (a webhook is created for it), or a workflow or source')
    .description('deliver an emitter\'s events to a listener (spec 4.5)')
    .option('--event-name <channel>', 'only this channel ($errors, $logs, ...)')
    .option('--name <name>', 'name of the webhook created for a URL')
    .option('--description <text>', 'description of the webhook created for a URL')
    .action((emitter: string, listener: string, opts, cmd: Command) => subscribe(context(cmd), emitter, listener, opts));
  program.command('unsubscribe').argument('<subscription | emitter>').argument('[listener]')
    .description('delete a subscription, by id or by emitter and listener')
    .option('--event-name <channel>', 'the channel of the subscription')
    .action((first: string, listener: string | undefined, opts, cmd: Command) => unsubscribe(context(cmd), first, listener, opts));

  const admin = program.command('admin').description('admin commands on the data directory (SLUICE_DATA_DIR); stop the server first');
  const adminCommands = (parent: Command, hidden: boolean) => {
    parent.command('create-account', { hidden }).description('create an account and print its API key (JSON)')
      .option('--name <name>', 'the account\'s name').option('--key <key>', 'the API key (default: a random one)')
      .action(async (opts) => setExit(await (await import('./admin')).runAdmin('create-account', opts)));
    parent.command('rebuild', { hidden }).description('drop every read model and rebuild it from the log (JSON)')
      .action(async () => setExit(await (await import('./admin')).runAdmin('rebuild', {})));
  };
  adminCommands(admin, false);
  // The old forms (`npm run admin -- create-account`), kept for scripts.
  adminCommands(program, true);
  return program;
}
