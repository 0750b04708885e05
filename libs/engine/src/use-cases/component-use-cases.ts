import { join } from 'node:path';
import { EventTypes, newId, RawDescription, Streams, validateDefinition } from '@app/domain';
import { bundleComponent, ComponentCodeError, PackageCache } from '@app/sandbox';
import { EgressError, performOutbound } from '@app/delivery';
import { ComponentInvalidError, ConflictError, InvalidFieldsError, NotFoundError, TooLargeError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';
import { ensurePrivateDir } from '../private-files';

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
  private packageCache: PackageCache | null = null;

  constructor(private readonly rt: EngineRuntime) {}

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
   * The saved component a request names: an id as is, code or a URL saved first, `key@version`
   * as that published version, a key as the newest published version of it (else the newest
   * saved component with it). Nothing named is
   * an InvalidFieldsError when `required`, else undefined.
   */
  async resolve(accountId: string, ref: ComponentRef, required: boolean): Promise<string | undefined> {
    if (ref.id) return ref.id;
    if (ref.code) return this.save(accountId, { code: ref.code });
    if (ref.url) return this.save(accountId, { url: ref.url });
    if (ref.key) {
      const pinned = splitKeyVersion(ref.key);
      if (pinned) {
        const exact = this.rt.queries.published(accountId, pinned.key, pinned.version);
        if (!exact) throw new NotFoundError(`component ${ref.key} in the registry`, 'key');
        return exact.component_id;
      }
      const published = this.rt.queries.registry(accountId).find((r) => r.key === ref.key);
      if (published) return published.component_id;
      const row = this.rt.queries.componentByKey(accountId, ref.key);
      if (!row) throw new NotFoundError(`component with key ${ref.key}`, 'key');
      return row.id;
    }
    if (required) throw new InvalidFieldsError([{ field: 'component_id', message: 'or component_code, component_url or key is required' }]);
    return undefined;
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
    const cached = this.byHash.get(`${accountId}/${bundled.codeHash}`);
    if (cached && this.rt.queries.component(cached)) {
      if (publish) await this.publish(accountId, cached);
      return cached;
    }
    const described = await this.rt.sandbox.describe(bundled.codeHash, bundled.bundle);
    if ('error' in described) {
      throw new ComponentInvalidError([{ field, message: described.error.message }],
        `${field} could not be loaded: ${described.error.name}: ${described.error.message}`);
    }
    const checked = validateDefinition(described as unknown as RawDescription, { publish });
    if (!checked.definition) throw new ComponentInvalidError(checked.errors);
    if (publish && !checked.definition.key) throw new ComponentInvalidError([{ field: 'key', message: 'is required to publish' }]);
    if (publish) this.checkPublishable(accountId, checked.definition.key!, checked.definition.version, bundled.codeHash);
    const componentId = newId('sc');
    await this.rt.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentSaved,
      data: { componentId, accountId, code, codeHash: bundled.codeHash, bundle: bundled.bundle, definition: checked.definition },
      metadata: { actor: accountId },
    }], 'no_stream');
    this.byHash.set(`${accountId}/${bundled.codeHash}`, componentId);
    if (publish) await this.publish(accountId, componentId);
    return componentId;
  }

  private checkPublishable(accountId: string, key: string, version: string, codeHash: string): void {
    const existing = this.rt.queries.published(accountId, key, version);
    if (existing && existing.code_hash !== codeHash) {
      throw new ConflictError(`${key}@${version} is already published with other code; publish a new version`);
    }
  }
}
