import { join } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { EventTypes, newId, RawDescription, Streams, validateDefinition } from '@app/domain';
import { bundleComponent, ComponentCodeError, PackageCache } from '@app/sandbox';
import { EgressError, performOutbound } from '@app/delivery';
import { ApiError } from '../http/api-error';
import { SluiceEngine, ensurePrivateDir } from '@app/engine';
import { checkUrl } from '../http/request-params';

/** Largest component source accepted. */
export const MAX_COMPONENT_CODE_BYTES = 512 * 1024;

/**
 * Saves component code: bundles it, loads it in the sandbox to read its definition, validates that
 * against the spec's rules and records `component.saved`. The same code saved twice by one account
 * gives the same component.
 */
@Injectable()
export class ComponentSaver {
  private readonly byHash = new Map<string, string>();
  private packageCache: PackageCache | null = null;

  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async fetchCode(url: string): Promise<string> {
    checkUrl('component_url', url);
    try {
      const res = await performOutbound(
        { url, method: 'GET', headers: { accept: 'text/plain, application/javascript, */*' }, timeoutMs: 15000, maxResponseBytes: MAX_COMPONENT_CODE_BYTES },
        { allow: this.engine.config.egressAllow },
      );
      if (res.status !== 200) throw ApiError.fields([{ field: 'component_url', message: `answered HTTP ${res.status}, expected 200` }]);
      return res.body.toString('utf8');
    } catch (err) {
      if (err instanceof EgressError) throw ApiError.fields([{ field: 'component_url', message: `cannot be fetched: ${err.message}` }]);
      throw err;
    }
  }

  /** Packages imported by components are installed under `<dataDir>/packages`, one cache per server. */
  private packages(): PackageCache {
    if (!this.packageCache) {
      // Owner-only like the rest of the data directory, whatever npm's own modes inside.
      const dir = join(this.engine.config.dataDir, 'packages');
      ensurePrivateDir(dir);
      this.packageCache = new PackageCache(dir);
    }
    return this.packageCache;
  }

  /**
   * Saves code and, with `publish`, puts `key@version` in the account's registry: a semantic
   * version and a key are required then, and the same key and version with other code is a 409.
   */
  async save(accountId: string, code: string, field = 'component_code', publish = false): Promise<string> {
    if (Buffer.byteLength(code) > MAX_COMPONENT_CODE_BYTES) {
      throw new ApiError(413, 'payload_too_large', `${field} is larger than ${MAX_COMPONENT_CODE_BYTES} bytes`);
    }
    let bundled: { bundle: string; codeHash: string };
    try {
      bundled = await bundleComponent(code, { packageCache: this.packages() });
    } catch (err) {
      if (err instanceof ComponentCodeError) {
        throw new ApiError(400, 'component_invalid', `${field} is not a valid component: ${err.message}`, {
          fields: { [field]: err.message }, ...(err.location ? { location: err.location } : {}),
        });
      }
      throw err;
    }
    const cached = this.byHash.get(`${accountId}/${bundled.codeHash}`);
    if (cached && this.engine.queries.component(cached)) {
      if (publish) await this.publish(accountId, cached);
      return cached;
    }
    const described = await this.engine.sandbox.describe(bundled.codeHash, bundled.bundle);
    if ('error' in described) {
      throw new ApiError(400, 'component_invalid', `${field} could not be loaded: ${described.error.name}: ${described.error.message}`, {
        fields: { [field]: described.error.message },
      });
    }
    const checked = validateDefinition(described as unknown as RawDescription, { publish });
    if (!checked.definition) throw ApiError.fields(checked.errors, 'component_invalid');
    if (publish && !checked.definition.key) throw ApiError.fields([{ field: 'key', message: 'is required to publish' }], 'component_invalid');
    if (publish) this.checkPublishable(accountId, checked.definition.key!, checked.definition.version, bundled.codeHash);
    const componentId = newId('sc');
    await this.engine.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentSaved,
      data: { componentId, accountId, code, codeHash: bundled.codeHash, bundle: bundled.bundle, definition: checked.definition },
      metadata: { actor: accountId },
    }], 'no_stream');
    this.byHash.set(`${accountId}/${bundled.codeHash}`, componentId);
    if (publish) await this.publish(accountId, componentId);
    return componentId;
  }

  private checkPublishable(accountId: string, key: string, version: string, codeHash: string): void {
    const existing = this.engine.queries.published(accountId, key, version);
    if (existing && existing.code_hash !== codeHash) {
      throw new ApiError(409, 'conflict', `${key}@${version} is already published with other code; publish a new version`);
    }
  }

  private async publish(accountId: string, componentId: string): Promise<void> {
    const row = this.engine.queries.component(componentId)!;
    const def = JSON.parse(row.definition) as { key?: string; version: string; type: string };
    const checked = validateDefinition({ ...def, props: [], hooks: [], methods: [], hasRun: true }, { publish: true });
    if (!checked.definition) throw ApiError.fields(checked.errors.filter((e) => e.field === 'version'), 'component_invalid');
    if (!def.key) throw ApiError.fields([{ field: 'key', message: 'is required to publish' }], 'component_invalid');
    this.checkPublishable(accountId, def.key, def.version, row.code_hash);
    if (this.engine.queries.published(accountId, def.key, def.version)) return;
    await this.engine.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentPublished,
      data: { componentId, accountId, key: def.key, version: def.version, type: def.type, codeHash: row.code_hash },
      metadata: { actor: accountId },
    }]);
  }
}
