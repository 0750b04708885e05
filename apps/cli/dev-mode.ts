import { watch, type FSWatcher } from 'chokidar';
import { eventLine, followEvents, followLogs, logLines, type EventSummary, type SourceLog } from './follow';
import { resolveNamed } from './names';
import { bundleComponentFile, type SavedComponent } from './pd-client';
import { withProgress } from './progress';
import type { SluiceApi } from './sluice-api';

/** Options of `pd dev`. */
export interface DevOptions {
  dc?: string;
  name?: string;
  json: boolean;
  /** The configured props of a new deploy (typed, asked for or refused like `pd deploy`). */
  propsForDeploy: (component: SavedComponent) => Promise<Record<string, unknown>>;
}

/**
 * `pd dev <file>` / `pd dev --dc <source> <file>`: deploys the file (or updates the named
 * source with it), then on every save of the file or of a local file it imports updates that
 * same source (`PUT /v1/sources/{id}`, so its id, endpoint and data stay) and streams its
 * events (SSE) and runs (polled logs). Status lines go to stderr, events and logs to stdout
 * (one JSON object per line with `--json`). A save that does not bundle, or code the server
 * refuses, is reported and the previous code keeps running. Ctrl-C (`interrupted`) stops
 * watching and leaves the source deployed.
 */
export async function runDev(api: SluiceApi, file: string, interrupted: AbortSignal, opts: DevOptions): Promise<void> {
  const status = (line: string) => process.stderr.write(`${line}\n`);
  const out = (kind: string, value: unknown, text: string) => process.stdout.write(opts.json ? `${JSON.stringify({ type: kind, ...(value as object) })}\n` : `${text}\n`);

  let bundle = await bundleComponentFile(file);
  let sourceId: string;
  if (opts.dc) {
    const source = await resolveNamed(api, 'source', opts.dc);
    sourceId = source.id;
    await withProgress(`updating ${sourceId}`, api.put(`/v1/sources/${sourceId}`, { component_code: bundle.code }));
    status(`attached to ${sourceId} (${source.name_slug}) and updated it with ${file}`);
  } else {
    const component: SavedComponent = (await withProgress(`saving ${file} (the server installs its packages)`, api.post('/v1/components', { component_code: bundle.code }))).data;
    for (const w of component.warnings ?? []) status(`warning: ${w.field} ${w.message}`);
    const configured = await opts.propsForDeploy(component);
    const source = (await withProgress(`deploying ${file}`, api.post('/v1/sources', {
      component_id: component.id, ...(opts.name ? { name: opts.name } : {}), ...(Object.keys(configured).length ? { configured_props: configured } : {}),
    }))).data;
    sourceId = source.id;
    status(`deployed ${sourceId} (${source.name_slug})${source.endpoint_url ? ` at ${source.endpoint_url}` : ''}; later: pd dev --dc ${sourceId} ${file}`);
  }
  if (opts.json) out('deployed', { id: sourceId }, '');

  if (interrupted.aborted) {
    status(`stopped; ${sourceId} stays deployed`);
    return;
  }
  const stop = new AbortController();
  interrupted.addEventListener('abort', () => stop.abort(), { once: true });
  // Events after the newest one kept now: only what this session's code emits is shown.
  const newest: EventSummary | undefined = (await api.get(`/v1/sources/${sourceId}/event_summaries`, { limit: 1 })).data[0];
  let failure: unknown;
  // A follower that ends with an error (the source was deleted elsewhere) ends the session.
  const fail = (e: unknown) => {
    failure ??= e;
    stop.abort();
  };
  const eventsDone = followEvents(api, sourceId, newest?.id ?? '0-0', (e) => out('event', e, `event  ${eventLine(e)}`), stop.signal, (why) => status(`reconnecting to the event stream: ${why}`)).catch(fail);
  const logsDone = followLogs(api, sourceId, (l: SourceLog) => out('log', l, logLines(l)), stop.signal, { onError: (why) => status(`reading logs: ${why}`) }).catch(fail);

  let watched = new Set(bundle.inputs);
  const watcher: FSWatcher = watch([...watched], { ignoreInitial: true, awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 25 } });
  let running = false;
  let again = false;
  let version = 0;
  const redeploy = async () => {
    // One update at a time; saves during an update cause exactly one more, with the newest code.
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        try {
          bundle = await bundleComponentFile(file);
          const next = new Set(bundle.inputs);
          const added = [...next].filter((p) => !watched.has(p));
          const removed = [...watched].filter((p) => !next.has(p));
          if (added.length) watcher.add(added);
          if (removed.length) watcher.unwatch(removed);
          watched = next;
          await withProgress(`updating ${sourceId}`, api.put(`/v1/sources/${sourceId}`, { component_code: bundle.code }));
          version += 1;
          status(`updated ${sourceId} (save ${version})`);
          if (opts.json) out('updated', { id: sourceId, save: version }, '');
        } catch (e) {
          status(`error: ${(e as Error).message} (still running the previous code)`);
        }
      } while (again && !stop.signal.aborted);
    } finally {
      running = false;
    }
  };
  watcher.on('change', () => void redeploy());
  watcher.on('add', () => void redeploy());
  watcher.on('error', (e) => status(`watching: ${(e as Error).message}`));
  await new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
  status(`watching ${watched.size} file${watched.size === 1 ? '' : 's'}; Ctrl-C stops watching (the source stays deployed)`);

  if (!stop.signal.aborted) await new Promise<void>((resolveStop) => stop.signal.addEventListener('abort', () => resolveStop(), { once: true }));
  await watcher.close();
  await Promise.allSettled([eventsDone, logsDone]);
  if (failure) throw failure;
  status(`stopped; ${sourceId} stays deployed`);
}

