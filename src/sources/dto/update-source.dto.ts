import { BooleanField, JsonObjectField, TextField } from '../../http/input-fields';
import { OptionalComponentReference } from './component-reference';

/** `PUT /v1/sources/{id}`: what to change; absent fields stay as they are. */
export class UpdateSourceDto extends OptionalComponentReference {
  @TextField()
  name?: string;

  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @BooleanField()
  active?: boolean;
}
