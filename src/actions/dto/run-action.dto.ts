import { JsonObjectField, TextField } from '../../http/input-fields';
import type { ComponentReference } from '../../sources/dto/component-reference';

/**
 * `POST /v1/actions/run`: the action (a saved id, code, a URL, a registry `key` or `key@version`;
 * the first given wins, in that order) and its configured props.
 */
export class RunActionDto implements ComponentReference {
  @JsonObjectField()
  configured_props?: Record<string, unknown>;

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
