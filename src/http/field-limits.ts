/**
 * The longest value, in characters, of each text parameter of the REST API. Any parameter not
 * named here gets `DEFAULT_FIELD_MAX_LENGTH`, so a new field is bounded before anyone thinks of
 * it: a DTO's `@TextField()` takes its limit from the property's name. Over-long values are a
 * 400 naming the field and its limit, before anything is stored.
 */
export const FIELD_MAX_LENGTH: Readonly<Record<string, number>> = {
  url: 2048,
  component_url: 2048,
  name: 256,
  description: 2048,
  event_name: 256,
  emitter_id: 128,
  listener_id: 128,
  component_id: 128,
  key: 256,
  query: 256,
  since: 64,
  after: 128,
  before: 128,
  start_id: 64,
  end_id: 64,
  expand: 32,
  // Bounded in bytes by the component saver (413), which knows the code's own limit.
  component_code: Number.POSITIVE_INFINITY,
  code: Number.POSITIVE_INFINITY,
  // Apps and connected accounts (issue 9): an OAuth state is a sealed payload, longer than an id.
  state: 4096,
  name_slug: 63,
  auth_type: 16,
  app: 63,
  account: 128,
  error: 256,
};

/** The limit of any text parameter not in `FIELD_MAX_LENGTH`. */
export const DEFAULT_FIELD_MAX_LENGTH = 256;

/** The largest object parameter (`configured_props`) accepted, as JSON text. */
export const MAX_OBJECT_PARAM_JSON = 64 * 1024;

/** The length limit of a text parameter. */
export function maxLengthOf(field: string): number {
  return Object.hasOwn(FIELD_MAX_LENGTH, field) ? FIELD_MAX_LENGTH[field] : DEFAULT_FIELD_MAX_LENGTH;
}
