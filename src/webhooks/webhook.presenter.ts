import type { DeliveryRow, WebhookRow } from '@app/projections';

/** A webhook as the API returns it (compat fields first). */
export function presentWebhook(row: WebhookRow, opts: { withUser?: boolean } = {}): Record<string, unknown> {
  return {
    id: row.id,
    ...(opts.withUser === false ? {} : { user_id: row.account_id }),
    name: row.name,
    description: row.description,
    url: row.url,
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A delivery with its attempts. */
export function presentDelivery(row: DeliveryRow): Record<string, unknown> {
  return {
    id: row.id,
    emit_id: row.emit_id,
    emitter_id: row.emitter_id,
    event_name: row.event_name,
    status: row.status,
    attempts: JSON.parse(row.attempts),
    next_attempt_at: row.status === 'pending' || row.status === 'failed' ? row.next_attempt_at : null,
    created_at: Math.floor(row.created_at / 1000),
  };
}
