import { EgressError } from '../src/delivery.types';
import { EgressGuard, parseAllowList, pinnedLookup, ResolvedAddress } from '../src/egress-guard';
import { cidrContains, classifyIp, formatIp, parseCidr, parseIp } from '../src/ip-classifier';

function classOf(text: string): string {
  const ip = parseIp(text);
  if (!ip) throw new Error(`test address ${text} does not parse`);
  return classifyIp(ip).class;
}

/** A resolver answering from a table, counting its calls: no DNS traffic in unit tests. */
function fakeResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    calls.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

async function denial(promise: Promise<unknown>): Promise<EgressError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EgressError);
  return error as EgressError;
}

describe('IP parsing', () => {
  it('parses IPv4 and refuses shorthand, octal-looking and out-of-range forms', () => {
    expect(formatIp(parseIp('192.168.1.20')!)).toBe('192.168.1.20');
    for (const bad of ['1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.-4', '', 'a.b.c.d', '127.1', '0x7f.0.0.1', '0177.0.0.1', '2130706433']) {
      expect(parseIp(bad)).toBeNull();
    }
  });

  it('parses IPv6 with ::, brackets, an embedded dotted quad and a zone', () => {
    expect(formatIp(parseIp('::1')!)).toBe('0:0:0:0:0:0:0:1');
    expect(formatIp(parseIp('[2001:db8::8a2e:370:7334]')!)).toBe('2001:db8:0:0:0:8a2e:370:7334');
    expect(formatIp(parseIp('::ffff:127.0.0.1')!)).toBe('0:0:0:0:0:ffff:7f00:1');
    expect(formatIp(parseIp('fe80::1%eth0')!)).toBe('fe80:0:0:0:0:0:0:1');
    expect(formatIp(parseIp('::')!)).toBe('0:0:0:0:0:0:0:0');
    expect(formatIp(parseIp('1:2:3:4:5:6:7:8')!)).toBe('1:2:3:4:5:6:7:8');
    for (const bad of ['1:2:3:4:5:6:7', '1::2::3', ':1:2:3:4:5:6:7', '1:2:3:4:5:6:7:8:9', '12345::', 'g::1', '::1.2.3', '1:2:3:4:5:6:7::8',
      '::ffff:0177.0.0.1', '::ffff:0x7f.0.0.1', '::ffff:127.1', '::ffff:256.0.0.1']) {
      expect(parseIp(bad)).toBeNull();
    }
    // An IPv4-compatible address keeps its own bytes (it is not read as the IPv4-mapped form).
    expect(formatIp(parseIp('::127.0.0.1')!)).toBe('0:0:0:0:0:0:7f00:1');
    expect(formatIp(parseIp('1:2:3:4:5:6:10.0.0.1')!)).toBe('1:2:3:4:5:6:a00:1');
  });

  it('parses CIDRs and matches by prefix bits', () => {
    const net = parseCidr('172.16.0.0/12')!;
    expect(cidrContains(net, parseIp('172.31.255.255')!)).toBe(true);
    expect(cidrContains(net, parseIp('172.32.0.0')!)).toBe(false);
    expect(cidrContains(parseCidr('127.0.0.1/8')!, parseIp('127.9.9.9')!)).toBe(true);
    expect(cidrContains(parseCidr('::1/128')!, parseIp('::1')!)).toBe(true);
    expect(cidrContains(parseCidr('0.0.0.0/0')!, parseIp('8.8.8.8')!)).toBe(true);
    expect(cidrContains(parseCidr('10.0.0.0/8')!, parseIp('::ffff:10.0.0.1')!)).toBe(false);
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/-1', '10.0.0.0/8/8', 'x/8']) {
      expect(parseCidr(bad)).toBeNull();
    }
  });
});

describe('classifyIp', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.255.255.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'link_local'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'private'],
    ['fe80::1', 'link_local'],
    ['febf::1', 'link_local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['192.0.0.1', 'reserved'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['100::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['1::1', 'reserved'],
    ['fec0::1', 'private'],
    ['64:ff9b:1::a00:1', 'private'],
  ])('%s is %s', (ip, expected) => {
    expect(classOf(ip)).toBe(expected);
  });

  it.each(['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0', '169.253.255.255', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450::1'])(
    '%s is public',
    (ip) => {
      expect(classOf(ip)).toBe('public');
    },
  );

  it('looks through IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms', () => {
    expect(classifyIp(parseIp('::ffff:127.0.0.1')!)).toEqual({ class: 'loopback', embeddedIpv4: '127.0.0.1' });
    expect(classOf('::ffff:7f00:1')).toBe('loopback');
    expect(classOf('::ffff:a9fe:a9fe')).toBe('link_local');
    expect(classOf('::ffff:10.1.2.3')).toBe('private');
    expect(classOf('::ffff:0.0.0.0')).toBe('unspecified');
    expect(classOf('::127.0.0.1')).toBe('loopback');
    expect(classOf('64:ff9b::a00:1')).toBe('private');
    expect(classOf('2002:c0a8:101::1')).toBe('private');
    expect(classOf('::ffff:8.8.8.8')).toBe('public');
    expect(classOf('2002:808:808::1')).toBe('public');
    expect(classifyIp(parseIp('::ffff:10.0.0.1')!)).toEqual({ class: 'private', embeddedIpv4: '10.0.0.1' });
    expect(classifyIp(parseIp('64:ff9b::7f00:1')!)).toEqual({ class: 'loopback', embeddedIpv4: '127.0.0.1' });
    expect(classifyIp(parseIp('::ffff:198.18.0.1')!)).toEqual({ class: 'reserved', embeddedIpv4: '198.18.0.1' });
    // IPv4-translated (RFC 6145) form of 10.0.0.1.
    expect(classOf('::ffff:0:a00:1')).toBe('private');
    expect(classOf('64:ff9b::8.8.8.8')).toBe('public');
  });
});

describe('parseAllowList', () => {
  it('splits, trims and drops empty entries', () => {
    expect(parseAllowList(undefined)).toEqual([]);
    expect(parseAllowList('')).toEqual([]);
    expect(parseAllowList(' 127.0.0.1, localhost ,,10.0.0.0/8,::1/128, hooks.internal ')).toEqual([
      '127.0.0.1',
      'localhost',
      '10.0.0.0/8',
      '::1/128',
      'hooks.internal',
    ]);
  });

  it.each(['10.0.0.0/33', 'localhost:8080', 'http://x', 'foo bar', 'a/b', '-bad', '1.2.3.4/x'])('refuses %p naming the variable', (bad) => {
    expect(() => parseAllowList(`127.0.0.1,${bad}`)).toThrow(/SLUICE_EGRESS_ALLOW.*is not a host name/);
  });

  it('is what EgressGuard accepts', () => {
    expect(() => new EgressGuard({ allow: ['10.0.0.0/40'] })).toThrow(/10\.0\.0\.0\/40/);
  });
});

describe('EgressGuard', () => {
  it('refuses internal IP literals without resolving anything', async () => {
    const { resolve, calls } = fakeResolver({});
    const guard = new EgressGuard({ allow: [] }, { resolve });
    for (const host of [
      '127.0.0.1', '10.255.255.1', '169.254.169.254', '0.0.0.0', '100.64.1.1', '[::1]', '[::ffff:127.0.0.1]', '[fe80::1]', '[fd00::1]', '224.0.0.1', '[::]',
      '198.18.0.1', '[::ffff:10.0.0.1]', '100.64.0.1', '192.0.0.1', '[2001:db8::1]', '[fc00::1]', '255.255.255.255', '[ff02::1]', '[64:ff9b::7f00:1]',
    ]) {
      expect((await denial(guard.check(host))).code).toBe('egress_denied');
    }
    expect(calls).toEqual([]);
  });

  it('names the address and the reason in the refusal', async () => {
    const guard = new EgressGuard({ allow: [] }, { resolve: fakeResolver({ 'metadata.example': ['169.254.169.254'] }).resolve });
    const error = await denial(guard.check('metadata.example'));
    expect(error.message).toContain('169.254.169.254 (link-local address)');
    expect(error.message).toContain('SLUICE_EGRESS_ALLOW');
    const forComponents = new EgressGuard({ allow: [], allowVariable: 'SLUICE_COMPONENT_EGRESS_ALLOW' });
    expect((await denial(forComponents.check('127.0.0.1'))).message).toMatch(/allow it with SLUICE_COMPONENT_EGRESS_ALLOW$/);
    expect(() => parseAllowList('127.0.0.1:80', 'SLUICE_COMPONENT_EGRESS_ALLOW')).toThrow(/^SLUICE_COMPONENT_EGRESS_ALLOW: "127\.0\.0\.1:80"/);
    const mapped = await denial(guard.check('[::ffff:127.0.0.1]'));
    expect(mapped.message).toContain('loopback address 127.0.0.1 inside IPv6');
  });

  it('lets public addresses through as resolved', async () => {
    const guard = new EgressGuard({ allow: [] }, { resolve: fakeResolver({ 'hooks.example': ['93.184.216.34', '2606:2800:220:1::1'] }).resolve });
    await expect(guard.check('Hooks.Example.')).resolves.toEqual({
      host: 'hooks.example',
      address: '93.184.216.34',
      family: 4,
      addresses: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
    });
  });

  it('keeps only the permitted addresses of a name that mixes public and internal ones', async () => {
    const guard = new EgressGuard({ allow: [] }, { resolve: fakeResolver({ mixed: ['10.0.0.5', '93.184.216.34'] }).resolve });
    const checked = await guard.check('mixed');
    expect(checked.addresses).toEqual([{ address: '93.184.216.34', family: 4 }]);
    expect(checked.address).toBe('93.184.216.34');
  });

  it('allows by IP, by CIDR (IPv4 and IPv6) and IPv4 entries cover IPv4-mapped forms', async () => {
    const { resolve } = fakeResolver({});
    await expect(new EgressGuard({ allow: ['127.0.0.1'] }, { resolve }).check('127.0.0.1')).resolves.toMatchObject({ address: '127.0.0.1' });
    await expect(new EgressGuard({ allow: ['127.0.0.0/8'] }, { resolve }).check('127.1.2.3')).resolves.toMatchObject({ address: '127.1.2.3' });
    await expect(new EgressGuard({ allow: ['10.0.0.0/8'] }, { resolve }).check('[::ffff:10.9.9.9]')).resolves.toMatchObject({ family: 6 });
    await expect(new EgressGuard({ allow: ['::1/128'] }, { resolve }).check('[::1]')).resolves.toMatchObject({ address: '::1', family: 6 });
    await expect(new EgressGuard({ allow: ['fd00::/8'] }, { resolve }).check('[fd00:ec2::254]')).resolves.toMatchObject({ family: 6 });
    await denial(new EgressGuard({ allow: ['127.0.0.1'] }, { resolve }).check('127.0.0.2'));
    await denial(new EgressGuard({ allow: ['10.0.0.0/8'] }, { resolve }).check('192.168.0.1'));
  });

  it('allows every address of an allowed host name (case-insensitive), and only for that name', async () => {
    const { resolve } = fakeResolver({ localhost: ['::1', '127.0.0.1'], 'other.local': ['127.0.0.1'] });
    const guard = new EgressGuard({ allow: ['LocalHost'] }, { resolve });
    const checked = await guard.check('LOCALHOST');
    expect(checked.addresses.map((a) => a.address)).toEqual(['::1', '127.0.0.1']);
    await denial(guard.check('other.local'));
    await denial(guard.check('127.0.0.1'));
  });

  it('with only 127.0.0.1 allowed, reaches localhost through that address alone', async () => {
    const guard = new EgressGuard({ allow: ['127.0.0.1'] }, { resolve: fakeResolver({ localhost: ['::1', '127.0.0.1'] }).resolve });
    await expect(guard.check('localhost')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1', family: 4 }] });
  });

  it('reports an unresolvable name as a network error and an empty one as an invalid URL', async () => {
    const guard = new EgressGuard({ allow: [] }, { resolve: fakeResolver({}).resolve });
    const error = await denial(guard.check('nowhere.invalid'));
    expect(error.code).toBe('network');
    expect(error.message).toContain('ENOTFOUND');
    expect((await denial(guard.check(''))).code).toBe('invalid_url');
  });

  it('resolves a host once while its decision is cached, sharing concurrent lookups', async () => {
    const { resolve, calls } = fakeResolver({ 'hooks.example': ['93.184.216.34'], 'internal.example': ['10.0.0.1'] });
    const guard = new EgressGuard({ allow: [] }, { resolve });
    await Promise.all([guard.check('hooks.example'), guard.check('hooks.example'), guard.check('HOOKS.example')]);
    await guard.check('hooks.example');
    await denial(guard.check('internal.example'));
    await denial(guard.check('internal.example'));
    expect(calls).toEqual(['hooks.example', 'internal.example']);
  });

  it('does not cache resolution failures, and asks again once the cache is off', async () => {
    const { resolve, calls } = fakeResolver({ 'hooks.example': ['93.184.216.34'] });
    const guard = new EgressGuard({ allow: [] }, { resolve });
    await denial(guard.check('missing.example'));
    await denial(guard.check('missing.example'));
    expect(calls).toEqual(['missing.example', 'missing.example']);
    const uncached = new EgressGuard({ allow: [] }, { resolve, cacheTtlMs: 0 });
    await uncached.check('hooks.example');
    await uncached.check('hooks.example');
    expect(calls.filter((c) => c === 'hooks.example')).toHaveLength(2);
  });

  it('re-resolves after the cache entry expires and stays within its size bound', async () => {
    const now = jest.spyOn(Date, 'now').mockReturnValue(1_000_000);
    try {
      const { resolve, calls } = fakeResolver({ a: ['93.184.216.34'], b: ['93.184.216.35'], c: ['93.184.216.36'] });
      const guard = new EgressGuard({ allow: [] }, { resolve, cacheTtlMs: 5000, maxCachedHosts: 2 });
      await guard.check('a');
      now.mockReturnValue(1_004_999);
      await guard.check('a');
      now.mockReturnValue(1_005_000);
      await guard.check('a');
      expect(calls).toEqual(['a', 'a']);
      await guard.check('b');
      await guard.check('c');
      await guard.check('a');
      expect(calls).toEqual(['a', 'a', 'b', 'c', 'a']);
    } finally {
      now.mockRestore();
    }
  });

  it('knows an allowed decision while it is cached, and nothing else (not decided, refused, failed, expired)', async () => {
    const now = jest.spyOn(Date, 'now').mockReturnValue(2_000_000);
    try {
      const { resolve, calls } = fakeResolver({ 'hooks.example': ['93.184.216.34'], 'internal.example': ['10.0.0.1'] });
      const guard = new EgressGuard({ allow: [] }, { resolve, cacheTtlMs: 5000 });
      expect(guard.known('hooks.example')).toBeUndefined();
      const pending = guard.check('hooks.example');
      // Being decided: not known until the decision is made.
      expect(guard.known('hooks.example')).toBeUndefined();
      const destination = await pending;
      expect(guard.known('hooks.example')).toBe(destination);
      expect(guard.known('HOOKS.example.')).toBe(destination);
      await denial(guard.check('internal.example'));
      expect(guard.known('internal.example')).toBeUndefined();
      await denial(guard.check('missing.example'));
      expect(guard.known('missing.example')).toBeUndefined();
      now.mockReturnValue(2_005_000);
      expect(guard.known('hooks.example')).toBeUndefined();
      // Nothing was resolved to answer known().
      expect(calls).toEqual(['hooks.example', 'internal.example', 'missing.example']);
    } finally {
      now.mockRestore();
    }
  });
});

describe('pinnedLookup', () => {
  const lookupOnce = (addresses: ResolvedAddress[], options: object) =>
    new Promise<unknown[]>((resolve) => pinnedLookup(addresses)('anything.example', options as never, (...args: unknown[]) => resolve(args)));

  it('answers every name with the checked addresses only', async () => {
    const pinned: ResolvedAddress[] = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    expect(await lookupOnce(pinned, {})).toEqual([null, '93.184.216.34', 4]);
    expect(await lookupOnce(pinned, { family: 6 })).toEqual([null, '2606:2800:220:1::1', 6]);
    expect(await lookupOnce(pinned, { all: true })).toEqual([null, pinned]);
    expect(await lookupOnce(pinned, { all: true, family: 4 })).toEqual([null, [pinned[0]]]);
  });

  it('fails rather than falling back to DNS when no checked address fits the family', async () => {
    const [error] = await lookupOnce([{ address: '93.184.216.34', family: 4 }], { family: 6 });
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});
