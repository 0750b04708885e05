import type { WorkflowConfig, WorkflowTrigger } from '@app/domain';
import { publicProps } from '@app/domain';
import type { WorkflowRow, WorkflowRunRow } from '@app/projections';

function presentTrigger(t: WorkflowTrigger, endpointUrl: string | undefined): Record<string, unknown> {
  switch (t.type) {
    case 'http': return { type: 'http', custom_response: t.customResponse, endpoint_url: endpointUrl };
    case 'timer': return t.cron !== undefined ? { type: 'timer', cron: t.cron, timezone: t.timezone ?? 'UTC' } : { type: 'timer', interval_seconds: t.intervalSeconds };
    case 'emitter': return { type: 'emitter', emitter_id: t.emitterId, event_name: t.eventName };
    case 'manual': return { type: 'manual' };
  }
}

/** A workflow as the API returns it (secret prop values left out). */
export function presentWorkflow(row: WorkflowRow, publicUrl: string): Record<string, unknown> {
  const c = JSON.parse(row.config) as WorkflowConfig;
  return {
    id: row.id,
    name: row.name,
    name_slug: row.name_slug,
    active: row.active === 1,
    version: row.version,
    trigger: presentTrigger(c.trigger, c.endpointKey ? `${publicUrl}/e/${c.endpointKey}` : undefined),
    steps: c.steps.map((s) => ({ name: s.name, component_id: s.componentId, ...(s.key ? { key: s.key } : {}), configured_props: publicProps(s.configuredProps) })),
    settings: { concurrency: c.settings.concurrency, timeout_seconds: c.settings.timeoutSeconds ?? null },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

interface StepResult {
  index: number; name: string; status: string; ret?: unknown; exports: Record<string, unknown>; summary?: string;
  logs: { level: string; message: string; ts: number }[]; error?: unknown; durationMs: number; flowExit?: { reason: string };
}
interface SendResult { stepIndex: number; sendIndex: number; kind: string; ok: boolean; detail?: unknown; error?: string }

/** A run with every step (skipped ones included) and its sends, in the API.md shape. */
export function presentRun(row: WorkflowRunRow): Record<string, unknown> {
  const names = JSON.parse(row.step_names) as string[];
  const results = JSON.parse(row.results) as (StepResult | null)[];
  const sends = JSON.parse(row.sends) as SendResult[];
  const skipped = new Set(JSON.parse(row.skipped) as string[]);
  const trigger = JSON.parse(row.trigger) as { event: unknown; context: Record<string, unknown> };
  return {
    id: row.id,
    workflow_id: row.workflow_id,
    workflow_version: row.workflow_version,
    status: row.status,
    exit_reason: row.exit_reason,
    trigger: { event: trigger.event, context: { emitter_id: trigger.context.emitter_id, emit_id: trigger.context.emit_id, ts: trigger.context.ts } },
    started_at_ms: row.started_at_ms,
    finished_at_ms: row.finished_at_ms,
    steps: names.map((name, i) => {
      const r = results[i];
      if (!r) return { name, status: skipped.has(name) ? 'skipped' : 'pending', ret: null, exports: {}, summary: null, logs: [], error: null, duration_ms: null, sends: [] };
      return {
        name,
        status: r.status,
        ret: r.ret ?? null,
        exports: r.exports,
        summary: r.summary ?? null,
        logs: r.logs,
        error: r.error ?? null,
        duration_ms: r.durationMs,
        ...(r.flowExit ? { exit_reason: r.flowExit.reason } : {}),
        sends: sends.filter((s) => s.stepIndex === i).map((s) => ({ kind: s.kind, ok: s.ok, detail: s.detail ?? null, error: s.error ?? null })),
      };
    }),
  };
}
