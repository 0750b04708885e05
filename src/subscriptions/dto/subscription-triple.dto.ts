import { TextField } from '../../http/input-fields';

/**
 * A subscription named by its triple (`POST` and `DELETE /v1/subscriptions`): `emitter_id` and
 * `listener_id` are required, `event_name` defaults to `""` (every event).
 */
export class SubscriptionTripleDto {
  @TextField({ required: true })
  emitter_id!: string;

  @TextField({ required: true })
  listener_id!: string;

  @TextField()
  event_name = '';
}
