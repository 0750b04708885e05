import { JsonObjectField } from '../../http/input-fields';
import { RequiredComponentReference } from '../../sources/dto/component-reference';

/**
 * `POST /v1/actions/run`: the action (a saved id, code, a URL, a registry `key` or `key@version`;
 * the first given wins, in that order) and its configured props.
 */
export class RunActionDto extends RequiredComponentReference {
  @JsonObjectField()
  configured_props?: Record<string, unknown>;
}
