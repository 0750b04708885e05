import { Matches } from 'class-validator';
import { PageLimitField, TextField } from '../../http/input-fields';

/** `GET /v1/sources/{id}/history`: `limit` events after the stream revision `after` (this list's cursors). */
export class HistoryQueryDto {
  @PageLimitField()
  limit = 10;

  @Matches(/^\d{1,15}$/, { message: 'is not a cursor of this list (use page_info.end_cursor)' })
  @TextField()
  after?: string;
}
