import { BooleanField, JsonObjectField, TextField } from '../../http/input-fields';
import type { ComponentReference } from './component-reference';

/** `PUT /v1/sources/{id}`: what to change; absent fields stay as they are. */
export class UpdateSourceDto implements ComponentReference {
  @TextField()
  name?: string;

  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @BooleanField()
  active?: boolean;

  @TextField()
  component_id?: string;

  @TextField()
  component_code?: string;

  @TextField()
  code?: string;

  @TextField()
  component_url?: string;

  @TextField()
  key?: string;
}
