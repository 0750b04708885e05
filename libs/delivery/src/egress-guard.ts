import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { domainToASCII } from 'node:url';
import { EgressError, EgressPolicy } from './delivery.types';
import {
  AddressClassification,
  classifyIp,
  cidrContains,
  ipFamily,
  ipv4FromMapped,
  IpNetwork,
  parseCidr,
  parseIp,
  ParsedIp,
} from './ip-classifier';

/** One address a host resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** A host the guard let through, with the only addresses a connection to it may use. */
export interface CheckedDestination {
  /** The host as checked: lower case, without URL brackets or a trailing dot. */
  host: string;
  /** The first permitted address (the resolver's preferred one). */
  address: string;
  family: 4 | 6;
  /** Every permitted address, in the resolver's order; never empty. */
  addresses: ResolvedAddress[];
}

/** Resolves a host name to all its addresses (the default uses the system resolver, like `dns.lookup`). */
export type HostResolver = (host: string) => Promise<ResolvedAddress[]>;

/** Tuning of an {@link EgressGuard}; the defaults suit production. */
export interface EgressGuardOptions {
  /** How long a decision about a host is reused (ms). Default 5000; 0 disables the cache. */
  cacheTtlMs?: number;
  /** Most hosts remembered at once. Default 10000. */
  maxCachedHosts?: number;
  resolve?: HostResolver;
}

type AllowEntry = { kind: 'host'; name: string } | { kind: 'network'; network: IpNetwork };

interface CachedDecision {
  expiresAt: number;
  decision: Promise<CheckedDestination>;
  /** The decision's value once it allowed the host (what {@link EgressGuard.known} answers with). */
  allowed?: CheckedDestination;
}

const systemResolver: HostResolver = async (host) => {
  const found = await dnsLookup(host, { all: true });
  return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
};

/**
 * The SSRF guard: resolves a host and refuses it unless at least one of its addresses is public
 * or allowed by the policy (a matching host name allows all of them). Connections must then use
 * only the returned addresses (see {@link pinnedLookup}) so that a second DNS answer cannot
 * swap in an internal address after the check (DNS rebinding).
 *
 * Decisions are cached per host for a few seconds: `dns.lookup` runs on libuv's small thread
 * pool, and a busy delivery queue would otherwise resolve the same few hosts thousands of times a
 * second. Concurrent checks of one host share a single lookup. Resolution failures are not cached.
 */
export class EgressGuard {
  private readonly allowedHosts = new Set<string>();
  private readonly allowedNetworks: IpNetwork[] = [];
  private readonly cache = new Map<string, CachedDecision>();
  private readonly cacheTtlMs: number;
  private readonly maxCachedHosts: number;
  private readonly resolve: HostResolver;
  private readonly allowVariable: string;

  /** Throws if an allow-list entry is not a host name, an IP or a CIDR. */
  constructor(policy: EgressPolicy, options: EgressGuardOptions = {}) {
    for (const raw of policy.allow) {
      const entry = parseAllowEntry(raw);
      if (!entry) throw new Error(`egress allow-list entry "${raw}" is not a host name, an IP address or a CIDR`);
      if (entry.kind === 'host') this.allowedHosts.add(entry.name);
      else this.allowedNetworks.push(entry.network);
    }
    this.cacheTtlMs = options.cacheTtlMs ?? 5000;
    this.maxCachedHosts = options.maxCachedHosts ?? 10_000;
    this.resolve = options.resolve ?? systemResolver;
    this.allowVariable = policy.allowVariable ?? 'SLUICE_EGRESS_ALLOW';
  }

  /**
   * Resolves `host` (a name or an IP literal, URL brackets allowed) and returns the addresses a
   * connection may use. Rejects with EgressError `egress_denied` when none is permitted,
   * `network` when the name does not resolve, `invalid_url` for an empty host.
   */
  check(host: string): Promise<CheckedDestination> {
    const name = normalizeHost(host);
    if (!name) return Promise.reject(new EgressError('the URL has no host', 'invalid_url'));
    const now = Date.now();
    const cached = this.cache.get(name);
    if (cached && cached.expiresAt > now) return cached.decision;
    const decision = this.decide(name);
    if (this.cacheTtlMs > 0) {
      if (cached) this.cache.delete(name);
      else if (this.cache.size >= this.maxCachedHosts) this.evictOldest(now);
      const entry: CachedDecision = { expiresAt: now + this.cacheTtlMs, decision };
      this.cache.set(name, entry);
      decision.then((destination) => (entry.allowed = destination), (error: unknown) => {
        const isDenial = error instanceof EgressError && error.code === 'egress_denied';
        if (!isDenial && this.cache.get(name)?.decision === decision) this.cache.delete(name);
      });
    }
    return decision;
  }

  /**
   * The destination `host` was allowed to reach by a decision still cached, or undefined (not
   * decided yet, being decided, refused, or expired: ask {@link check}). Lets a caller skip the
   * promise and the deadline timer of a check whose answer is already known, as it is for every
   * delivery to a receiver seen in the last few seconds.
   */
  known(host: string): CheckedDestination | undefined {
    const cached = this.cache.get(normalizeHost(host));
    return cached?.allowed !== undefined && cached.expiresAt > Date.now() ? cached.allowed : undefined;
  }

  /** True when `ip` may be reached: public, or inside an allowed network (IPv4-mapped forms match IPv4 entries). */
  isAddressAllowed(ip: ParsedIp): boolean {
    return this.classify(ip) === null;
  }

  private async decide(host: string): Promise<CheckedDestination> {
    const literal = parseIp(host);
    let resolved: ResolvedAddress[];
    if (literal) {
      resolved = [{ address: host, family: ipFamily(literal) }];
    } else {
      try {
        resolved = await this.resolve(host);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        throw new EgressError(`could not resolve ${host}: ${code}`, 'network');
      }
      if (resolved.length === 0) throw new EgressError(`could not resolve ${host}: no addresses`, 'network');
    }
    const hostAllowed = this.allowedHosts.has(host);
    const permitted: ResolvedAddress[] = [];
    const refused: string[] = [];
    for (const candidate of resolved) {
      const ip = parseIp(candidate.address);
      if (!ip) {
        refused.push(`${candidate.address} (unparseable)`);
        continue;
      }
      const refusal = hostAllowed ? null : this.classify(ip);
      if (refusal) refused.push(`${candidate.address} (${describe(refusal)})`);
      else permitted.push(candidate);
    }
    // Connecting only to the permitted subset is safe because the connection is pinned to it;
    // refusing the whole name would break hosts like `localhost` when only 127.0.0.1 is allowed.
    if (permitted.length === 0) {
      throw new EgressError(
        `egress to ${host} denied: it resolves to ${refused.join(', ')}; allow it with ${this.allowVariable}`,
        'egress_denied',
      );
    }
    return { host, address: permitted[0].address, family: permitted[0].family, addresses: permitted };
  }

  private classify(ip: ParsedIp): AddressClassification | null {
    const classification = classifyIp(ip);
    if (classification.class === 'public') return null;
    const mapped = ipv4FromMapped(ip);
    const allowed = this.allowedNetworks.some(
      (network) => cidrContains(network, ip) || (mapped !== null && cidrContains(network, mapped)),
    );
    return allowed ? null : classification;
  }

  private evictOldest(now: number): void {
    for (const [host, entry] of this.cache) {
      if (entry.expiresAt <= now) this.cache.delete(host);
    }
    if (this.cache.size >= this.maxCachedHosts) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }
}

/**
 * A `lookup` for `http.request` / `net.connect` that answers every query with the checked
 * addresses, never asking DNS again. Honours `family` and `all` (used by Happy Eyeballs).
 */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const matching = wanted === 0 ? addresses : addresses.filter((entry) => entry.family === wanted);
    process.nextTick(() => {
      if (matching.length === 0) {
        const error: NodeJS.ErrnoException = new Error(`no checked IPv${wanted} address for ${hostname}`);
        error.code = 'ENOTFOUND';
        callback(error, '', 0);
      } else if (options.all) {
        callback(null, matching.map((entry) => ({ address: entry.address, family: entry.family })));
      } else {
        callback(null, matching[0].address, matching[0].family);
      }
    });
  };
}

/**
 * Splits an allow-list variable (comma-separated host names, IPs and CIDRs) into entries, trimmed,
 * empties dropped. Throws an error naming the variable and the entry when one is malformed.
 */
export function parseAllowList(env: string | undefined, variable = 'SLUICE_EGRESS_ALLOW'): string[] {
  if (!env) return [];
  const entries = env
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  for (const entry of entries) {
    if (!parseAllowEntry(entry)) {
      throw new Error(`${variable}: "${entry}" is not a host name, an IP address or a CIDR (e.g. localhost, 127.0.0.1, 10.0.0.0/8, ::1/128)`);
    }
  }
  return entries;
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

function parseAllowEntry(raw: string): AllowEntry | null {
  const text = raw.trim();
  if (!text) return null;
  const network = parseCidr(text);
  if (network) return { kind: 'network', network };
  // domainToASCII would quietly cut at a path or port, so such characters are refused first.
  if (/[\s/:@?#[\]%\\]/.test(text)) return null;
  const name = normalizeHost(domainToASCII(text));
  return name && HOST_NAME.test(name) ? { kind: 'host', name } : null;
}

function normalizeHost(host: string): string {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[') && name.endsWith(']')) name = name.slice(1, -1);
  if (name.endsWith('.')) name = name.slice(0, -1);
  return name;
}

const CLASS_LABELS: Record<AddressClassification['class'], string> = {
  public: 'public address',
  unspecified: 'unspecified address',
  loopback: 'loopback address',
  private: 'private address',
  link_local: 'link-local address',
  shared: 'shared (CGNAT) address',
  multicast: 'multicast address',
  reserved: 'reserved address',
};

function describe(refusal: AddressClassification): string {
  const label = CLASS_LABELS[refusal.class];
  return refusal.embeddedIpv4 ? `${label} ${refusal.embeddedIpv4} inside IPv6` : label;
}
