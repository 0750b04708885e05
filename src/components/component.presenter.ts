import { definitionWarnings, type ComponentDefinition } from '@app/domain';
import type { BuiltinComponent } from '@app/engine';
import type { ComponentRow } from '@app/projections';

/**
 * `configurable_props` as a UI needs them: the user-facing props, with interface props described,
 * and `remoteOptions: true` on props whose options come from a method.
 */
export function configurableProps(def: ComponentDefinition): Record<string, unknown>[] {
  return def.props.map((p) => {
    const out: Record<string, unknown> = { name: p.name, type: p.type };
    for (const k of ['label', 'description', 'optional', 'default', 'secret', 'min', 'max', 'options', 'customResponse', 'useQuery', 'reloadProps', 'app', 'propDefinition']) {
      if (p[k] !== undefined) out[k] = p[k];
    }
    // Options loaded by a method: a UI asks POST /v1/components/{id}/props/{prop}/options for them.
    if (Array.isArray(p.functions) && p.functions.includes('options')) out.remoteOptions = true;
    return out;
  });
}

/**
 * A saved component as the API returns it (compat), plus `warnings` when the definition relies on
 * what is accepted beyond the spec (definitionWarnings).
 */
export function presentComponent(row: ComponentRow): Record<string, unknown> {
  const def = JSON.parse(row.definition) as ComponentDefinition;
  const warnings = definitionWarnings(def);
  return {
    id: row.id,
    code: row.code,
    code_hash: row.code_hash,
    key: row.key,
    name: row.name,
    version: row.version,
    type: row.type,
    description: row.description,
    configurable_props: configurableProps(def),
    created_at: row.created_at,
    updated_at: row.updated_at,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/**
 * A built-in registry component as the API returns it: the shape of a saved component, with
 * `id` null (an account gets its own `sc_` copy when it deploys or runs it) and `builtin: true`.
 */
export function presentBuiltin(c: BuiltinComponent): Record<string, unknown> {
  const warnings = definitionWarnings(c.definition);
  return {
    id: null,
    code: c.code,
    code_hash: c.codeHash,
    key: c.key,
    name: c.name,
    version: c.version,
    type: c.type,
    description: c.description ?? null,
    configurable_props: configurableProps(c.definition),
    created_at: null,
    updated_at: null,
    builtin: true,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}
