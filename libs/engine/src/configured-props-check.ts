import { FieldError, PropDefinition, StoredProps, validateAppProps, validateConfiguredProps } from '@app/domain';
import type { EngineRuntime } from './engine-runtime';

/**
 * Validates configured props for `accountId` and returns what to store: `validateConfiguredProps`
 * for values (secrets sealed), plus app props as `{authProvisionId}` references to the account's
 * own connected accounts of the prop's app (`validateAppProps`). Used at deploy, update, workflow
 * save and action runs, so every entry point applies the same rules.
 */
export function checkConfiguredProps(
  rt: EngineRuntime, accountId: string, props: PropDefinition[], given: Record<string, unknown> | undefined, previous?: StoredProps,
): { values: StoredProps; errors: FieldError[] } {
  const plain = validateConfiguredProps(props, given, rt.box, previous);
  const apps = validateAppProps(props, given, accountId, (id) => {
    const row = rt.queries.apps.connectedAccount(id);
    return row ? { accountId: row.account_id, app: row.app } : undefined;
  }, (slug) => {
    const app = slug === undefined ? undefined : rt.apps.find(accountId, slug);
    return app !== undefined && app.spec.authType !== 'none';
  }, previous);
  return { values: { ...plain.values, ...apps.values }, errors: [...plain.errors, ...apps.errors] };
}
