import type { PageRequest } from '@app/projections';
import { PageLimitField, TextField } from './input-fields';
import { IsPageCursor } from './input-formats';

/** The query of a paged list: `limit` (1..100, default 10), `after` (older items), `before` (newer ones). */
export class PageQueryDto implements PageRequest {
  @PageLimitField()
  limit = 10;

  @IsPageCursor()
  @TextField()
  after?: string;

  @IsPageCursor()
  @TextField()
  before?: string;
}
