import { parseDroppingRiskyKeys } from './guest/json-request-body.guest';

/**
 * Parses JSON produced in the guest. Keys `__proto__`, `constructor` and `prototype` are dropped
 * at every depth, so guest data merged into host objects later cannot pollute prototypes
 * (`parseDroppingRiskyKeys`, which a guest's request body is parsed with too).
 */
export function parseGuestJson(text: string): unknown {
  return parseDroppingRiskyKeys(text);
}
