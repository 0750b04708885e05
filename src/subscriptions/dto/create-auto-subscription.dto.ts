import { TextField } from '../../http/input-fields';

/** `POST /v1/auto_subscriptions`: `listener_id` is required, `event_name` defaults to `""` (every event). */
export class CreateAutoSubscriptionDto {
  @TextField({ required: true })
  listener_id!: string;

  @TextField()
  event_name = '';
}
