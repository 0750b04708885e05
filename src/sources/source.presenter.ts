import { ComponentDefinition, definitionWarnings, publicProps, SecretBox, StoredProps } from '@app/domain';
import type { SourceRow } from '@app/projections';

/** Configured props as returned: secrets left out, HTTP props as `{endpoint_url}`, timers as `{cron, interval_seconds, timezone}`. */
export function presentConfiguredProps(def: ComponentDefinition | undefined, stored: StoredProps, endpointUrl?: string): Record<string, unknown> {
  const out = publicProps(stored);
  for (const p of def?.props ?? []) {
    if (p.type === '$.interface.http') out[p.name] = { endpoint_url: endpointUrl ?? null };
    if (p.type === '$.interface.timer') {
      const v = (stored[p.name] ?? p.default ?? {}) as { intervalSeconds?: number; cron?: string; timezone?: string };
      out[p.name] = { cron: v.cron ?? null, interval_seconds: v.intervalSeconds ?? null, timezone: v.timezone ?? null };
    }
    if (p.secret) delete out[p.name];
  }
  return out;
}

/** `{warnings}` when the source's component relies on what is accepted beyond the spec, else nothing. */
function warningsOf(def: ComponentDefinition | undefined): { warnings?: { field: string; message: string }[] } {
  const warnings = def ? definitionWarnings(def) : [];
  return warnings.length > 0 ? { warnings } : {};
}

/** A source as the API returns it (compat fields, plus `endpoint_url`, `status`, and `failing` / `last_error` from its last run). */
export function presentSource(row: SourceRow, def: ComponentDefinition | undefined, publicUrl: string): Record<string, unknown> {
  const endpointUrl = row.endpoint_key ? `${publicUrl}/e/${row.endpoint_key}` : undefined;
  return {
    id: row.id,
    user_id: row.account_id,
    component_id: row.component_id,
    configured_props: presentConfiguredProps(def, JSON.parse(row.configured_props) as StoredProps, endpointUrl),
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    name: row.name,
    name_slug: row.name_slug,
    ...(endpointUrl ? { endpoint_url: endpointUrl } : {}),
    status: row.status,
    failing: row.failing === 1,
    last_error: row.last_error ? (JSON.parse(row.last_error) as unknown) : null,
    ...warningsOf(def),
  };
}

/** Replaces sealed secrets in an event's data with a mask, for the audit trail. */
export function maskSecrets(value: unknown): unknown {
  if (SecretBox.isSealed(value)) return '[secret]';
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskSecrets(v);
    return out;
  }
  return value;
}

/** One item of `event_summaries` and of the SSE stream (compat shape). */
export function presentEventSummary(
  sourceId: string,
  e: { summaryId: string; ms: number; channel: string; emitId: string; event: unknown; meta: Record<string, unknown> },
  expand: boolean,
): Record<string, unknown> {
  return {
    id: e.summaryId,
    indexed_at_ms: e.ms,
    ...(expand ? { event: e.event } : {}),
    metadata: { emit_id: e.emitId, emitter_id: sourceId, name: e.channel, id: e.meta.id, summary: e.meta.summary, ts: e.meta.ts ?? e.ms },
  };
}
