import ipaddr from 'ipaddr.js';

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
export interface ParsedIp {
  family: 4 | 6;
  bytes: Uint8Array;
}

/** A network: the first `prefix` bits of `bytes`. */
export interface IpNetwork extends ParsedIp {
  prefix: number;
}

/** Why an address may not be reached without an allow-list entry; `public` may be reached. */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'shared'
  | 'multicast'
  | 'reserved';

/** The class of an address and, for IPv6 forms that carry an IPv4 address, that address. */
export interface AddressClassification {
  class: AddressClass;
  /** Set when an IPv6 address embeds the IPv4 address that decided the class. */
  embeddedIpv4?: string;
}

/** Parses a dotted-quad IPv4 address (no leading zeros, no shorthand forms); null if it is not one. */
export function parseIpv4(text: string): ParsedIp | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i];
    // Leading zeros are refused: some parsers read them as octal, so their meaning is ambiguous.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[i] = value;
  }
  return { family: 4, bytes };
}

/** Parses an IPv6 address (`::` shorthand, a trailing dotted quad, an optional `%zone`); null if it is not one. */
export function parseIpv6(text: string): ParsedIp | null {
  const zone = text.indexOf('%');
  let rest = zone >= 0 ? text.slice(0, zone) : text;
  if (rest.length === 0) return null;
  let tailIpv4: Uint8Array | null = null;
  if (rest.includes('.')) {
    const lastColon = rest.lastIndexOf(':');
    if (lastColon < 0) return null;
    const v4 = parseIpv4(rest.slice(lastColon + 1));
    if (!v4) return null;
    tailIpv4 = v4.bytes;
    // Keep a placeholder group so the `::` arithmetic below counts the two groups the quad fills.
    rest = rest.slice(0, lastColon + 1) + '0:0';
  }
  const halves = rest.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (half: string): string[] | null => {
    if (half === '') return [];
    const groups = half.split(':');
    return groups.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g)) ? groups : null;
  };
  const head = groupsOf(halves[0]);
  const tail = halves.length === 2 ? groupsOf(halves[1]) : [];
  if (!head || !tail) return null;
  const explicit = head.length + tail.length;
  if (halves.length === 2 ? explicit > 7 : explicit !== 8) return null;
  const groups = [...head, ...Array<string>(8 - explicit).fill('0'), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  if (tailIpv4) bytes.set(tailIpv4, 12);
  return { family: 6, bytes };
}

/** Parses an IPv4 or IPv6 address, with or without URL brackets; null if it is neither. */
export function parseIp(text: string): ParsedIp | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  return parseIpv4(bare) ?? parseIpv6(bare);
}

/** Parses `ip/prefix` or a single IP (a full-length prefix); null if malformed or the prefix is out of range. */
export function parseCidr(text: string): IpNetwork | null {
  const slash = text.indexOf('/');
  const ip = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (!ip) return null;
  const bits = ip.bytes.length * 8;
  if (slash < 0) return { ...ip, prefix: bits };
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  return prefix <= bits ? { ...ip, prefix } : null;
}

/** True when `ip` lies inside `network` (same family only). */
export function cidrContains(network: IpNetwork, ip: ParsedIp): boolean {
  if (network.family !== ip.family) return false;
  const whole = network.prefix >> 3;
  for (let i = 0; i < whole; i++) if (network.bytes[i] !== ip.bytes[i]) return false;
  const remainder = network.prefix & 7;
  if (remainder === 0) return true;
  const mask = (0xff << (8 - remainder)) & 0xff;
  return (network.bytes[whole] & mask) === (ip.bytes[whole] & mask);
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), else null. */
export function ipv4FromMapped(ip: ParsedIp): ParsedIp | null {
  return ip.family === 6 && cidrContains(IPV4_MAPPED, ip) ? { family: 4, bytes: ip.bytes.slice(12, 16) } : null;
}

/** Canonical text of an address (IPv4 dotted quad; IPv6 lower-case hex groups without compression). */
export function formatIp(ip: ParsedIp): string {
  if (ip.family === 4) return Array.from(ip.bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] << 8) | ip.bytes[i + 1]).toString(16));
  return groups.join(':');
}

function network(text: string): IpNetwork {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`bad built-in network ${text}`);
  return parsed;
}

const IPV4_MAPPED = network('::ffff:0:0/96');
/** Global unicast IPv6 (RFC 4291); everything outside it is unallocated or special. */
const IPV6_GLOBAL_UNICAST = network('2000::/3');

/**
 * IPv6 prefixes whose bits at the given byte offset are an IPv4 address: such an address is
 * classified by that IPv4 address, so `::ffff:10.0.0.1` is private and `::ffff:8.8.8.8` public.
 */
const IPV6_EMBEDDING: ReadonlyArray<readonly [IpNetwork, number]> = [
  [IPV4_MAPPED, 12],
  // IPv4-translated (RFC 6145).
  [network('::ffff:0:0:0/96'), 12],
  // IPv4-compatible (deprecated); `::` and `::1` are matched before this.
  [network('::/96'), 12],
  // NAT64 well-known prefix (RFC 6052).
  [network('64:ff9b::/96'), 12],
  [network('2002::/16'), 2],
];

/**
 * Names of the special-purpose ranges in ipaddr.js (a maintained copy of the IANA registries),
 * mapped to our classes. A name missing here is refused as `reserved`, so a range added by a
 * later ipaddr.js release is closed until someone decides otherwise.
 */
const RANGE_CLASSES: Readonly<Record<string, AddressClass>> = {
  unicast: 'public',
  // AS112 and AMT are anycast services that IANA lists as globally reachable.
  as112: 'public',
  as112v6: 'public',
  amt: 'public',
  unspecified: 'unspecified',
  loopback: 'loopback',
  private: 'private',
  uniqueLocal: 'private',
  // Site-local, deprecated but still routed inside some networks.
  deprecatedSiteLocal: 'private',
  // Local-use NAT64 (RFC 8215): translates to addresses of the operator's own network.
  rfc6052: 'private',
  linkLocal: 'link_local',
  carrierGradeNat: 'shared',
  multicast: 'multicast',
};

/**
 * Classifies an address: anything not `public` is refused by the egress guard unless allowed.
 * Only globally routable unicast is `public`: the special-purpose ranges come from ipaddr.js,
 * IPv6 must also be inside 2000::/3, and IPv6 forms that embed an IPv4 address (mapped,
 * translated, compatible, NAT64, 6to4) are classified by that address.
 */
export function classifyIp(ip: ParsedIp): AddressClassification {
  const address = ipaddr.fromByteArray(Array.from(ip.bytes));
  if (ip.family === 6) {
    const range = address.range();
    if (range === 'unspecified' || range === 'loopback') return { class: range };
    for (const [prefix, offset] of IPV6_EMBEDDING) {
      if (!cidrContains(prefix, ip)) continue;
      const embedded: ParsedIp = { family: 4, bytes: ip.bytes.slice(offset, offset + 4) };
      return { class: classifyIp(embedded).class, embeddedIpv4: formatIp(embedded) };
    }
    const cls = RANGE_CLASSES[range] ?? 'reserved';
    if (cls === 'public' && !cidrContains(IPV6_GLOBAL_UNICAST, ip)) return { class: 'reserved' };
    return { class: cls };
  }
  return { class: RANGE_CLASSES[address.range()] ?? 'reserved' };
}
