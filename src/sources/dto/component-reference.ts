import { TextField } from '../../http/input-fields';

/**
 * How a source request names its component: a saved id, code to save (`component_code`, or
 * `code`), a URL to fetch it from, or a registry key; the first given wins, in that order.
 */
export interface ComponentReference {
  component_id?: string;
  component_code?: string;
  code?: string;
  component_url?: string;
  key?: string;
}

/** The ways to give a component other than its id (its code, a URL, a registry key). */
class ComponentByContent {
  @TextField()
  component_code?: string;

  @TextField()
  code?: string;

  @TextField()
  component_url?: string;

  @TextField()
  key?: string;
}

/** The component fields of a request that may leave the component as it is (an update). */
export class OptionalComponentReference extends ComponentByContent implements ComponentReference {
  @TextField()
  component_id?: string;
}

/** The component fields of a request that must name one (a deploy, an action run). */
export class RequiredComponentReference extends ComponentByContent implements ComponentReference {
  @TextField({
    required: {
      unlessAnyOf: ['component_code', 'code', 'component_url', 'key'],
      message: 'or component_code, component_url or key is required',
    },
  })
  component_id?: string;
}
