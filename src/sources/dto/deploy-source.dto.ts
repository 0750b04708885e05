import { BooleanField, JsonObjectField, TextField } from '../../http/input-fields';
import { RequiredComponentReference } from './component-reference';

/** `POST /v1/sources`: a component (one of its four references is required) and its settings. */
export class DeploySourceDto extends RequiredComponentReference {
  @TextField()
  name?: string;

  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @BooleanField()
  active = true;
}
