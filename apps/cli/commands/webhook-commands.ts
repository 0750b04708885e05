import { CliError } from '../cli-error';
import { printJson, printText } from '../output';
import type { Context } from './context';
import { resolveAny } from './list-commands';

/** `pd webhooks create <url>`: the spec's query-string parameters; the name defaults to the URL's host. */
export async function createWebhook(ctx: Context, url: string, opts: { name?: string; description?: string }): Promise<Record<string, any>> {
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    throw CliError.usage(`not a URL: ${url}`);
  }
  // The spec's clients send the creation parameters in the query string.
  return (await ctx.api.post('/v1/webhooks', undefined, { url, name: opts.name ?? host, description: opts.description ?? `created by pd for ${host}` })).data;
}

/** An emitter named by the user: a source or workflow (id, slug or name), or a glob / id as it is. */
async function emitterId(ctx: Context, ref: string): Promise<string> {
  if (/^(dc|p)_\*$/.test(ref)) return ref;
  return (await resolveAny(ctx.api, ref, ['source', 'workflow'])).item.id;
}

/** `pd subscribe <emitter> <listener>`: a URL listener gets a webhook created for it first. */
export async function subscribe(ctx: Context, emitter: string, listener: string, opts: { eventName?: string; name?: string; description?: string }): Promise<void> {
  const emitter_id = await emitterId(ctx, emitter);
  let listener_id: string;
  if (/^https?:\/\//.test(listener)) {
    const hook = await createWebhook(ctx, listener, opts);
    if (!ctx.json) process.stderr.write(`created webhook ${hook.id} for ${listener}\n`);
    listener_id = hook.id;
  } else {
    listener_id = (await resolveAny(ctx.api, listener, ['webhook', 'workflow', 'source'])).item.id;
  }
  const sub = (await ctx.api.post('/v1/subscriptions', undefined, { emitter_id, listener_id, ...(opts.eventName ? { event_name: opts.eventName } : {}) })).data;
  if (ctx.json) return printJson(sub);
  printText(`subscribed ${sub.listener_id} to ${sub.emitter_id}${sub.event_name ? ` [${sub.event_name}]` : ''} (${sub.id})`);
}

/** `pd unsubscribe <sub_id>` or `pd unsubscribe <emitter> <listener>`. */
export async function unsubscribe(ctx: Context, first: string, listener: string | undefined, opts: { eventName?: string }): Promise<void> {
  if (!listener) {
    if (!first.startsWith('sub_')) throw CliError.usage('pd unsubscribe takes a subscription id (sub_...), or an emitter and a listener');
    await ctx.api.del(`/v1/subscriptions/${encodeURIComponent(first)}`);
    if (ctx.json) printJson({ id: first, deleted: true });
    else printText(`deleted subscription ${first}`);
    return;
  }
  const emitter_id = await emitterId(ctx, first);
  const listener_id = (await resolveAny(ctx.api, listener, ['webhook', 'workflow', 'source'])).item.id;
  await ctx.api.del('/v1/subscriptions', { emitter_id, listener_id, event_name: opts.eventName ?? '' });
  if (ctx.json) printJson({ emitter_id, listener_id, deleted: true });
  else printText(`unsubscribed ${listener_id} from ${emitter_id}`);
}
