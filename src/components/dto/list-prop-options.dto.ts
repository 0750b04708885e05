import { Expose } from 'class-transformer';
import { IsOptional } from 'class-validator';
import { JsonObjectField, NonNegativeIntegerField, TextField } from '../../http/input-fields';

/**
 * `POST /v1/components/{id}/props/{prop}/options`: the props configured so far, the page
 * (0-based), the `context` the previous page returned (any JSON, handed back as it came) and
 * what the user typed (`query`, for props with `useQuery`).
 */
export class ListPropOptionsDto {
  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @NonNegativeIntegerField()
  page?: number;

  // Any JSON: components return `{nextPageToken}`, a cursor string, a number... Bounded by the engine.
  @Expose()
  @IsOptional()
  prev_context?: unknown;

  @TextField()
  query?: string;
}
