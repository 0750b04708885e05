import { baseType, FieldError } from './component-definition';
import type { PropDefinition, StoredProps } from './events';

/** How an app prop is configured and stored: a reference to a connected account (the original's shape). */
export interface AuthProvisionRef {
  authProvisionId: string;
}

/** Whether a value is exactly `{authProvisionId: "apn_..."}`. */
export function isAuthProvisionRef(v: unknown): v is AuthProvisionRef {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && keys[0] === 'authProvisionId' && typeof (v as AuthProvisionRef).authProvisionId === 'string'
    && (v as AuthProvisionRef).authProvisionId.startsWith('apn_');
}

/** What validation needs to know of a connected account. */
export interface ConnectedAccountFacts {
  /** The owning Sluice account (`u_...`). */
  accountId: string;
  /** The app's slug. */
  app: string;
}

/**
 * Validates the app props of a component (those `validateConfiguredProps` leaves out): each
 * configured value must be `{authProvisionId}` naming a connected account of `accountId` (another
 * account's is "not found", as everywhere) of the prop's `app` (when the prop names one).
 * Required unless `optional` or `needsAccount(app)` says the app takes no credentials (an app
 * with `auth_type: none`, or one this server does not know, used for its methods and
 * `propDefinitions` only: its `$auth` is then empty). Returns the references to store.
 * `previous` (an update that gives no props) keeps the stored references as they are.
 */
export function validateAppProps(
  props: PropDefinition[],
  given: Record<string, unknown> | undefined,
  accountId: string,
  lookup: (connectedAccountId: string) => ConnectedAccountFacts | undefined,
  needsAccount: (app: string | undefined) => boolean,
  previous?: StoredProps,
): { values: StoredProps; errors: FieldError[] } {
  const values: StoredProps = {};
  const errors: FieldError[] = [];
  for (const p of props) {
    if (baseType(p.type).base !== 'app') continue;
    const field = `configured_props.${p.name}`;
    const app = typeof p.app === 'string' ? p.app : undefined;
    let v = given?.[p.name];
    if (v === undefined && previous?.[p.name] !== undefined) {
      values[p.name] = previous[p.name];
      continue;
    }
    if (v === undefined || v === null) {
      if (!p.optional && needsAccount(app)) errors.push({ field, message: `is required: {"authProvisionId": "apn_..."} of a connected ${app ?? 'app'} account` });
      continue;
    }
    if (!isAuthProvisionRef(v)) {
      errors.push({ field, message: `must be {"authProvisionId": "apn_..."} (a connected ${app ?? 'app'} account)` });
      continue;
    }
    v = { authProvisionId: v.authProvisionId };
    const id = (v as AuthProvisionRef).authProvisionId;
    const facts = lookup(id);
    if (!facts || facts.accountId !== accountId) errors.push({ field, message: `connected account ${id} not found` });
    else if (app !== undefined && facts.app !== app) errors.push({ field, message: `connected account ${id} is a ${facts.app} account; this prop needs a ${app} account` });
    else values[p.name] = v;
  }
  return { values, errors };
}
