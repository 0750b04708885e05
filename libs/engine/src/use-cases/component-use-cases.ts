import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ComponentDefinition, EventTypes, newId, RawDescription, Streams, validateDefinition } from '@app/domain';
import { bundleComponent, ComponentCodeError, PackageCache } from '@app/sandbox';
import { EgressError, performOutbound } from '@app/delivery';
import { ComponentInvalidError, ConflictError, InvalidFieldsError, NotFoundError, TooLargeError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';
import { ensurePrivateDir } from '../private-files';
import { BuiltinComponent, BuiltinRegistry, BuiltinRuleError, defaultRegistryDir } from '../builtin-registry';

/** Largest component source accepted. */
export const MAX_COMPONENT_CODE_BYTES = 512 * 1024;

/** Component code given by text or by a URL to fetch it from. */
export type ComponentCode = { code: string } | { url: string };

/** How a request names the component of a source: saved (id), by key, or as code to save first. */
export interface ComponentRef {
  id?: string;
  code?: string;
  url?: string;
  key?: string;
}

/**
 * `key@version` split in two, or null for a plain key. Only a version that starts with a digit
 * counts, so a key that itself holds an `@` is still read as a key.
 */
export function splitKeyVersion(ref: string): { key: string; version: string } | null {
  const at = ref.lastIndexOf('@');
  if (at <= 0 || !/^\d/.test(ref.slice(at + 1))) return null;
  return { key: ref.slice(0, at), version: ref.slice(at + 1) };
}

/**
 * One key of an account's registry as listed: its own published components and Sluice's
 * built-in ones (`builtin: true`, `component_id` null until the account deploys it).
 */
export interface RegistryListing {
  key: string;
  version: string;
  type: string;
  name: string;
  description: string | null;
  component_id: string | null;
  builtin: boolean;
}

/** A registry key resolved for display: the account's own published component, or a built-in. */
export type RegistryItem = { builtin: false; componentId: string } | { builtin: true; component: BuiltinComponent };

/** An http(s) URL with a host, or an InvalidFieldsError naming `field`. */
export function checkHttpUrl(field: string, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new InvalidFieldsError([{ field, message: `must be an absolute http or https URL, got "${url.slice(0, 200)}"` }]);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
    throw new InvalidFieldsError([{ field, message: 'must be an http or https URL with a host' }]);
  }
}

/**
 * Saving and publishing components: code is bundled, loaded in the sandbox to read its
 * definition, validated against the spec's rules and recorded as `component.saved`. The same
 * code saved twice by one account gives the same component.
 */
export class ComponentUseCases {
  private readonly byHash = new Map<string, string>();
  private readonly savingBuiltins = new Map<string, Promise<string>>();
  private packageCache: PackageCache | null = null;
  /** Sluice's own components (registry/components), shared by every account. */
  private readonly builtins: BuiltinRegistry;

  constructor(private readonly rt: EngineRuntime, opts: { registryDir?: string | null } = {}) {
    this.builtins = new BuiltinRegistry(
      opts.registryDir === undefined ? defaultRegistryDir() : opts.registryDir,
      (code, file) => this.compile(code, file, true),
    );
  }

  /** Saves code (text or fetched from a URL) and, with `publish`, puts `key@version` in the account's registry. */
  async save(accountId: string, from: ComponentCode, opts: { publish?: boolean } = {}): Promise<string> {
    this.rt.assertWritable();
    if ('code' in from) return this.saveCode(accountId, from.code, 'component_code', opts.publish ?? false);
    return this.saveCode(accountId, await this.fetchCode(from.url), 'component_url', opts.publish ?? false);
  }

  /**
   * Puts a saved component in the account's registry as `key@version`: it needs a key and a
   * semantic version, and the same key and version already published with other code is a conflict.
   */
  async publish(accountId: string, componentId: string): Promise<void> {
    this.rt.assertWritable();
    const row = this.rt.queries.component(componentId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`component ${componentId}`);
    const def = JSON.parse(row.definition) as { key?: string; version: string; type: string };
    const checked = validateDefinition({ ...def, props: [], hooks: [], methods: [], hasRun: true }, { publish: true });
    if (!checked.definition) throw new ComponentInvalidError(checked.errors.filter((e) => e.field === 'version'));
    if (!def.key) throw new ComponentInvalidError([{ field: 'key', message: 'is required to publish' }]);
    this.checkPublishable(accountId, def.key, def.version, row.code_hash);
    if (this.rt.queries.published(accountId, def.key, def.version)) return;
    await this.rt.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentPublished,
      data: { componentId, accountId, key: def.key, version: def.version, type: def.type, codeHash: row.code_hash },
      metadata: { actor: accountId },
    }]);
  }

  /**
   * Takes `key@version` (or, without a version, every version of the key) out of the account's
   * registry, one event per version; returns what left, oldest first. Sources and workflow steps
   * deployed from it keep their saved component, and the version may be published again. Only
   * the account's own entries: a built-in component cannot be unpublished.
   */
  async unpublish(accountId: string, key: string, version?: string): Promise<string[]> {
    this.rt.assertWritable();
    const versions = this.rt.queries.publishedVersions(accountId, key).filter((v) => version === undefined || v.version === version);
    if (versions.length === 0) {
      const builtin = await this.builtin(key, version);
      if (builtin) throw new ConflictError(`${key} is a built-in component of this server; only an account's own published components can be unpublished`);
      throw new NotFoundError(`${version === undefined ? key : `${key}@${version}`} in the account's registry`, version === undefined ? 'key' : 'version');
    }
    for (const v of versions) {
      await this.rt.appendAndProject(Streams.component(v.component_id), [{
        type: EventTypes.componentUnpublished,
        data: { componentId: v.component_id, accountId, key, version: v.version },
        metadata: { actor: accountId },
      }]);
    }
    return versions.map((v) => `${key}@${v.version}`);
  }

  /**
   * The saved component a request names: an id as is, code or a URL saved first, `key@version`
   * as that published version, a key as the newest published version of it. The account's own
   * registry comes first (its namespace, spec 2.4), then Sluice's built-in components, saved into
   * the account at first use; a plain key neither of them has is the newest saved component
   * with it. Nothing named is an InvalidFieldsError when `required`, else undefined.
   */
  async resolve(accountId: string, ref: ComponentRef, required: boolean): Promise<string | undefined> {
    if (ref.id) return ref.id;
    if (ref.code) return this.save(accountId, { code: ref.code });
    if (ref.url) return this.save(accountId, { url: ref.url });
    if (ref.key) {
      const pinned = splitKeyVersion(ref.key);
      if (pinned) {
        const exact = this.rt.queries.published(accountId, pinned.key, pinned.version);
        if (exact) return exact.component_id;
        const builtin = await this.builtin(pinned.key, pinned.version);
        if (!builtin) throw new NotFoundError(`component ${ref.key} in the registry`, 'key');
        return this.saveBuiltin(accountId, builtin);
      }
      const published = this.rt.queries.registry(accountId).find((r) => r.key === ref.key);
      if (published) return published.component_id;
      const builtin = await this.builtin(ref.key);
      if (builtin) return this.saveBuiltin(accountId, builtin);
      const row = this.rt.queries.componentByKey(accountId, ref.key);
      if (!row) throw new NotFoundError(`component with key ${ref.key}`, 'key');
      return row.id;
    }
    if (required) throw new InvalidFieldsError([{ field: 'component_id', message: 'or component_code, component_url or key is required' }]);
    return undefined;
  }

  /**
   * The account's registry: its own published keys and the built-in ones, one entry per key
   * (an own key hides a built-in with the same key), sorted by key. A built-in that cannot be
   * loaded now (its package cannot be installed) is left out and logged.
   */
  async registry(accountId: string): Promise<RegistryListing[]> {
    const own = this.rt.queries.registry(accountId).map((r): RegistryListing => {
      const c = this.rt.queries.component(r.component_id)!;
      return { key: r.key, version: r.version, type: r.type, name: c.name, description: c.description, component_id: r.component_id, builtin: false };
    });
    const ownKeys = new Set(own.map((r) => r.key));
    const { components, failures } = await this.builtins.all();
    for (const f of failures) console.error(`built-in component ${f.file} is not available: ${f.error}`);
    const builtins = components.filter((c) => !ownKeys.has(c.key)).map((c): RegistryListing => ({
      key: c.key, version: c.version, type: c.type, name: c.name, description: c.description ?? null, component_id: null, builtin: true,
    }));
    return [...own, ...builtins].sort((a, b) => a.key.localeCompare(b.key));
  }

  /** One key of the account's registry (own first, then built-in), or a NotFoundError. */
  async registryItem(accountId: string, key: string): Promise<RegistryItem> {
    const own = this.rt.queries.registry(accountId).find((r) => r.key === key);
    if (own) return { builtin: false, componentId: own.component_id };
    const builtin = await this.builtin(key);
    if (!builtin) throw new NotFoundError(`registry component ${key}`);
    return { builtin: true, component: builtin };
  }

  /**
   * Registry keys whose key, name or description contains `query` (case-insensitive; empty:
   * all), split by type (the original's `{sources, actions}`).
   */
  async search(accountId: string, query: string): Promise<{ sources: string[]; actions: string[] }> {
    const q = query.toLowerCase();
    const hits = (await this.registry(accountId)).filter((r) => !q || [r.key, r.name, r.description ?? ''].some((t) => t.toLowerCase().includes(q)));
    return { sources: hits.filter((h) => h.type === 'source').map((h) => h.key), actions: hits.filter((h) => h.type === 'action').map((h) => h.key) };
  }

  /**
   * A built-in by key (and version). One whose file exists but whose code cannot be had now (a
   * package the npm registry does not give) or breaks the rules is a ComponentInvalidError naming
   * `key` and saying why; other failures (the sandbox, the store) are not the caller's and pass on.
   */
  private async builtin(key: string, version?: string): Promise<BuiltinComponent | undefined> {
    try {
      return await this.builtins.find(key, version);
    } catch (err) {
      if (!(err instanceof ComponentInvalidError) && !(err instanceof BuiltinRuleError)) throw err;
      throw new ComponentInvalidError([{ field: 'key', message: `built-in component ${key} cannot be loaded: ${err.message}` }]);
    }
  }

  /**
   * Saves a built-in into the account as its own component, from the bundle and definition the
   * registry already holds: no bundling, no package install and no sandbox load per account. An
   * account that saved this very code before gets that component back (also after a restart).
   */
  private saveBuiltin(accountId: string, c: BuiltinComponent): Promise<string> {
    const slot = `${accountId}/${c.codeHash}`;
    // Concurrent first uses by one account share one save instead of recording two copies.
    let saving = this.savingBuiltins.get(slot);
    if (!saving) {
      saving = this.saveBuiltinOnce(accountId, c).finally(() => this.savingBuiltins.delete(slot));
      this.savingBuiltins.set(slot, saving);
    }
    return saving;
  }

  private async saveBuiltinOnce(accountId: string, c: BuiltinComponent): Promise<string> {
    const cached = this.byHash.get(`${accountId}/${c.codeHash}`);
    if (cached && this.rt.queries.component(cached)) return cached;
    const before = this.rt.queries.componentByKey(accountId, c.key);
    if (before && before.code_hash === c.codeHash) {
      this.byHash.set(`${accountId}/${c.codeHash}`, before.id);
      return before.id;
    }
    return this.record(accountId, c.code, { bundle: c.bundle, codeHash: c.codeHash, definition: c.definition });
  }

  private async fetchCode(url: string): Promise<string> {
    checkHttpUrl('component_url', url);
    try {
      const res = await performOutbound(
        { url, method: 'GET', headers: { accept: 'text/plain, application/javascript, */*' }, timeoutMs: 15000, maxResponseBytes: MAX_COMPONENT_CODE_BYTES },
        { allow: this.rt.config.egressAllow },
      );
      if (res.status !== 200) throw new InvalidFieldsError([{ field: 'component_url', message: `answered HTTP ${res.status}, expected 200` }]);
      return res.body.toString('utf8');
    } catch (err) {
      if (err instanceof EgressError) throw new InvalidFieldsError([{ field: 'component_url', message: `cannot be fetched: ${err.message}` }]);
      throw err;
    }
  }

  /** Packages imported by components are installed under `<dataDir>/packages`, one cache per server. */
  private packages(): PackageCache {
    if (!this.packageCache) {
      // Owner-only like the rest of the data directory, whatever npm's own modes inside.
      const dir = join(this.rt.config.dataDir, 'packages');
      ensurePrivateDir(dir);
      this.packageCache = new PackageCache(dir);
    }
    return this.packageCache;
  }

  private async saveCode(accountId: string, code: string, field: string, publish: boolean): Promise<string> {
    const codeHash = createHash('sha256').update(code).digest('hex');
    const cached = this.byHash.get(`${accountId}/${codeHash}`);
    if (cached && this.rt.queries.component(cached)) {
      if (publish) await this.publish(accountId, cached);
      return cached;
    }
    const compiled = await this.compile(code, field, publish);
    if (publish && !compiled.definition.key) throw new ComponentInvalidError([{ field: 'key', message: 'is required to publish' }]);
    if (publish) this.checkPublishable(accountId, compiled.definition.key!, compiled.definition.version, compiled.codeHash);
    const componentId = await this.record(accountId, code, compiled);
    if (publish) await this.publish(accountId, componentId);
    return componentId;
  }

  /**
   * Bundles code (installing its packages), loads it on a throwaway isolate to read its
   * definition and validates that; nothing is recorded. Errors name `field`.
   */
  private async compile(code: string, field: string, publish: boolean): Promise<{ bundle: string; codeHash: string; definition: ComponentDefinition }> {
    if (Buffer.byteLength(code) > MAX_COMPONENT_CODE_BYTES) throw new TooLargeError(`${field} is larger than ${MAX_COMPONENT_CODE_BYTES} bytes`);
    let bundled: { bundle: string; codeHash: string };
    try {
      bundled = await bundleComponent(code, { packageCache: this.packages() });
    } catch (err) {
      if (err instanceof ComponentCodeError) {
        throw new ComponentInvalidError([{ field, message: err.message }], `${field} is not a valid component: ${err.message}`, err.location);
      }
      throw err;
    }
    const described = await this.rt.sandbox.describe(bundled.codeHash, bundled.bundle);
    if ('error' in described) {
      throw new ComponentInvalidError([{ field, message: described.error.message }],
        `${field} could not be loaded: ${described.error.name}: ${described.error.message}`);
    }
    const checked = validateDefinition(described as unknown as RawDescription, { publish });
    if (!checked.definition) throw new ComponentInvalidError(checked.errors);
    return { bundle: bundled.bundle, codeHash: bundled.codeHash, definition: checked.definition };
  }

  /** Records `component.saved` for the account and remembers it by code hash. */
  private async record(accountId: string, code: string, c: { bundle: string; codeHash: string; definition: ComponentDefinition }): Promise<string> {
    const componentId = newId('sc');
    await this.rt.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentSaved,
      data: { componentId, accountId, code, codeHash: c.codeHash, bundle: c.bundle, definition: c.definition },
      metadata: { actor: accountId },
    }], 'no_stream');
    this.byHash.set(`${accountId}/${c.codeHash}`, componentId);
    return componentId;
  }

  private checkPublishable(accountId: string, key: string, version: string, codeHash: string): void {
    const existing = this.rt.queries.published(accountId, key, version);
    if (existing && existing.code_hash !== codeHash) {
      throw new ConflictError(`${key}@${version} is already published with other code; publish a new version`);
    }
  }
}
