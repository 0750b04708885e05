import { BooleanField, JsonObjectField, TextField } from '../../http/input-fields';
import type { ComponentReference } from './component-reference';

/** `POST /v1/sources`: a component (one of its four references is required) and its settings. */
export class DeploySourceDto implements ComponentReference {
  @TextField()
  name?: string;

  @JsonObjectField()
  configured_props?: Record<string, unknown>;

  @BooleanField()
  active = true;

  @TextField({
    required: {
      unlessAnyOf: ['component_code', 'code', 'component_url', 'key'],
      message: 'or component_code, component_url or key is required',
    },
  })
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
