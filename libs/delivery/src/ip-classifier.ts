import ipaddr from 'ipaddr.js';

/** An IP address as ipaddr.js parses it (without an IPv6 zone). */
export type ParsedIp = ipaddr.IPv4 | ipaddr.IPv6;

/** A network: the first `prefix` bits of `address`. */
export interface IpNetwork {
  address: ParsedIp;
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

/** 4 or 6, as `net` and `dns` number address families. */
export function ipFamily(ip: ParsedIp): 4 | 6 {
  return ip.kind() === 'ipv4' ? 4 : 6;
}

/**
 * Parses a dotted-quad IPv4 address; null if it is not one. Stricter than `ipaddr.parse`, which
 * also reads `127.1`, `0x7f.0.0.1` and `0177.0.0.1`: such forms are refused because resolvers and
 * URL parsers disagree about their meaning (octal or decimal), which is how SSRF filters get fooled.
 */
export function parseIpv4(text: string): ipaddr.IPv4 | null {
  return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : null;
}

/** A trailing dotted quad of an IPv6 address (`::ffff:1.2.3.4`), with what precedes it. */
const TRAILING_QUAD = /^(.*:)([^:]*\.[^:]*)$/;

/**
 * Parses an IPv6 address (`::` shorthand, a trailing dotted quad, an optional `%zone`, dropped);
 * null if it is not one. The trailing quad is checked as strictly as {@link parseIpv4} and turned
 * into two hex groups before ipaddr.js sees it: ipaddr.js would accept octal and hex octets there,
 * and reads `::a.b.c.d` as the IPv4-mapped `::ffff:a.b.c.d` instead of the IPv4-compatible address.
 */
export function parseIpv6(text: string): ipaddr.IPv6 | null {
  const zone = text.indexOf('%');
  let body = zone >= 0 ? text.slice(0, zone) : text;
  const quad = TRAILING_QUAD.exec(body);
  if (quad) {
    const v4 = parseIpv4(quad[2]);
    if (!v4) return null;
    const [a, b, c, d] = v4.octets;
    body = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  if (!ipaddr.IPv6.isValid(body)) return null;
  return new ipaddr.IPv6(ipaddr.IPv6.parse(body).parts);
}

/** Parses an IPv4 or IPv6 address, with or without URL brackets; null if it is neither. */
export function parseIp(text: string): ParsedIp | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  return parseIpv4(bare) ?? parseIpv6(bare);
}

/** Parses `ip/prefix` or a single IP (a full-length prefix); null if malformed or the prefix is out of range. */
export function parseCidr(text: string): IpNetwork | null {
  const slash = text.indexOf('/');
  const address = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (!address) return null;
  const bits = ipFamily(address) === 4 ? 32 : 128;
  if (slash < 0) return { address, prefix: bits };
  const prefixText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  return prefix <= bits ? { address, prefix } : null;
}

/** True when `ip` lies inside `network` (same family only: ipaddr.js throws across families). */
export function cidrContains(network: IpNetwork, ip: ParsedIp): boolean {
  return network.address.kind() === ip.kind() && ip.match(network.address, network.prefix);
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), else null. */
export function ipv4FromMapped(ip: ParsedIp): ipaddr.IPv4 | null {
  return ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() ? ip.toIPv4Address() : null;
}

/** Canonical text of an address (IPv4 dotted quad; IPv6 lower-case hex groups without compression). */
export function formatIp(ip: ParsedIp): string {
  return ip.toNormalizedString();
}

function network(text: string): IpNetwork {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`bad built-in network ${text}`);
  return parsed;
}

/** Global unicast IPv6 (RFC 4291); everything outside it is unallocated or special. */
const IPV6_GLOBAL_UNICAST = network('2000::/3');

/**
 * IPv6 prefixes whose bytes at the given offset are an IPv4 address: such an address is
 * classified by that IPv4 address, so `::ffff:10.0.0.1` is private and `::ffff:8.8.8.8` public.
 * ipaddr.js names most of these ranges (ipv4Mapped, rfc6145, rfc6052, 6to4) but its `range()`
 * does not look inside them, and it has no name for the IPv4-compatible `::/96`.
 */
const IPV6_EMBEDDING: ReadonlyArray<readonly [IpNetwork, number]> = [
  [network('::ffff:0:0/96'), 12],
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
 * IPv6 must also be inside 2000::/3 (ipaddr.js calls all of the unlisted space `unicast`), and
 * IPv6 forms that embed an IPv4 address (mapped, translated, compatible, NAT64, 6to4) are
 * classified by that address.
 */
export function classifyIp(ip: ParsedIp): AddressClassification {
  const range: string = ip.range();
  if (ip.kind() === 'ipv4') return { class: RANGE_CLASSES[range] ?? 'reserved' };
  if (range === 'unspecified' || range === 'loopback') return { class: range };
  for (const [prefix, offset] of IPV6_EMBEDDING) {
    if (!cidrContains(prefix, ip)) continue;
    const embedded = new ipaddr.IPv4(ip.toByteArray().slice(offset, offset + 4));
    return { class: classifyIp(embedded).class, embeddedIpv4: formatIp(embedded) };
  }
  const cls = RANGE_CLASSES[range] ?? 'reserved';
  if (cls === 'public' && !cidrContains(IPV6_GLOBAL_UNICAST, ip)) return { class: 'reserved' };
  return { class: cls };
}
