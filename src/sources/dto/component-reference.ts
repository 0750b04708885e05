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
