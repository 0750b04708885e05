import type { Command } from 'commander';
import { clientSettings, type ClientSettings } from '../cli-config';
import { SluiceApi } from '../sluice-api';

/** The global options every command sees. */
export interface GlobalOptions {
  profile?: string;
  json?: boolean;
}

/** What each client command works with. */
export interface Context {
  api: SluiceApi;
  json: boolean;
  settings: ClientSettings;
}

/** The API client, output mode and settings of a command, from its global options and the config. */
export function context(cmd: Command): Context {
  const o = cmd.optsWithGlobals<GlobalOptions>();
  const settings = clientSettings(o.profile);
  return { api: new SluiceApi(settings.url, settings.key), json: o.json === true, settings };
}

/**
 * An AbortSignal that Ctrl-C (or SIGTERM) aborts; stopping a follow is a success. Called first
 * thing in a following command, so that a Ctrl-C at any moment ends it cleanly; the handlers
 * stay until the process ends, so a second Ctrl-C while stopping does not kill it mid-way.
 */
export function interruptSignal(): AbortSignal {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return stop.signal;
}
