import { TextField } from '../../http/input-fields';

/** `GET /v1/sources/{id}/sse`: an optional `event_name` filter. */
export class EventStreamQueryDto {
  @TextField()
  event_name?: string;
}
