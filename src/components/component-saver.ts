import { join } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { EventTypes, newId, RawDescription, Streams, validateDefinition } from '@app/domain';
import { bundleComponent, ComponentCodeError, PackageCache } from '@app/sandbox';
import { EgressError, performOutbound } from '@app/delivery';
import { ApiError } from '../engine/api-error';
import { SluiceEngine } from '../engine/sluice-engine';
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
    this.packageCache ??= new PackageCache(join(this.engine.config.dataDir, 'packages'));
    return this.packageCache;
  }

  async save(accountId: string, code: string, field = 'component_code'): Promise<string> {
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
    if (cached && this.engine.queries.component(cached)) return cached;
    const described = await this.engine.sandbox.describe(bundled.codeHash, bundled.bundle);
    if ('error' in described) {
      throw new ApiError(400, 'component_invalid', `${field} could not be loaded: ${described.error.name}: ${described.error.message}`, {
        fields: { [field]: described.error.message },
      });
    }
    const checked = validateDefinition(described as unknown as RawDescription);
    if (!checked.definition) throw ApiError.fields(checked.errors, 'component_invalid');
    const componentId = newId('sc');
    await this.engine.appendAndProject(Streams.component(componentId), [{
      type: EventTypes.componentSaved,
      data: { componentId, accountId, code, codeHash: bundled.codeHash, bundle: bundled.bundle, definition: checked.definition },
      metadata: { actor: accountId },
    }], 'no_stream');
    this.byHash.set(`${accountId}/${bundled.codeHash}`, componentId);
    return componentId;
  }
}
