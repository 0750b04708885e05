import { JsonObjectField } from '../../http/input-fields';

/** `POST /v1/components/{id}/props/reload`: the props configured so far (`additionalProps()` runs with them). */
export class ReloadPropsDto {
  @JsonObjectField()
  configured_props?: Record<string, unknown>;
}
