import { PageLimitField, TextField } from '../../http/input-fields';

/** `GET /v1/sources/{id}/event_summaries`: the newest `limit` (default 100), `expand=event`, an `event_name` filter. */
export class EventSummariesQueryDto {
  @PageLimitField()
  limit = 100;

  @TextField()
  expand?: string;

  @TextField()
  event_name?: string;
}
