/**
 * Whose address counts. Brute-force counters are kept per "source": an IPv4 address as
 * is, or the /64 prefix of an IPv6 address (one customer line or host usually holds a whole /64,
 * so counting single IPv6 addresses would hand an attacker 2^64 fresh sources). IPv4-mapped IPv6
 * (`::ffff:192.0.2.1`, what a dual-stack listener reports for IPv4 peers) counts as the IPv4.
 *
 * The address itself is the socket peer, or X-Forwarded-For when the peer is a trusted proxy
 * (src/http: proxy-addr over the trusted proxies, CallerContext.sourceIp). The client-declared IPAddress of
 * ValidateUser replaces it only when the request comes from a trusted caller of that
 * application (a server that logs its own users in and passes their address on).
 */
import { BlockList, isIP } from 'node:net';

/** The bucket for a request whose address is unknown or unreadable (they share one source). */
export const UNKNOWN_SOURCE = 'unknown';

export interface NormalizedIp {
  readonly family: 4 | 6;
  /** IPv4 dotted quad, or IPv6 in RFC 5952 form. */
  readonly text: string;
  /** IPv6 only: the eight 16-bit groups. */
  readonly groups?: readonly number[];
}

/** RFC 5952 text of eight groups: lower-case hex, the longest run (2+) of zero groups as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best === -1) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}

/** The eight 16-bit groups of an IPv6 address that node:net accepts (no zone), or null. */
function ipv6Groups(text: string): number[] | null {
  let rest = text;
  const tail: number[] = [];
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(rest);
  if (v4 !== null) {
    const [a, b, c, d] = [v4[1], v4[2], v4[3], v4[4]].map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    rest = rest.slice(0, rest.length - v4[0].length);
    if (!rest.endsWith('::')) rest = rest.slice(0, -1); // the ':' before the dotted quad
  }
  const halves = rest.split('::');
  if (halves.length > 2) return null;
  const parse = (half: string): number[] => (half === '' ? [] : half.split(':').map((g) => parseInt(g, 16)));
  const left = parse(halves[0] ?? '');
  const right = halves.length === 2 ? parse(halves[1] ?? '') : [];
  const known = left.length + right.length + tail.length;
  const groups = halves.length === 1
    ? (known === 8 ? [...left, ...tail] : null)
    : (known <= 7 ? [...left, ...new Array<number>(8 - known).fill(0), ...right, ...tail] : null);
  if (groups === null || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups;
}

/**
 * An IP address in one canonical form: IPv4 as is; IPv4-mapped IPv6 as its IPv4; any other IPv6
 * with its eight groups. A zone (`fe80::1%eth0`) is ignored. null for anything that is not an IP.
 */
export function normalizeIp(address: string | null | undefined): NormalizedIp | null {
  if (typeof address !== 'string') return null;
  const text = address.trim().replace(/%[^%]*$/, '');
  const family = isIP(text);
  if (family === 4) return { family: 4, text };
  if (family !== 6) return null;
  const groups = ipv6Groups(text);
  if (groups === null) return null;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [g6 = 0, g7 = 0] = groups.slice(6);
    return { family: 4, text: `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}` };
  }
  return { family: 6, text: formatIpv6(groups), groups };
}

/** The brute-force source of an address: IPv4 as is, IPv6 as its /64 (`2001:db8:1:2::/64`); UNKNOWN_SOURCE for non-IPs. */
export function sourceKey(address: string | null | undefined): string {
  const ip = normalizeIp(address);
  if (ip === null) return UNKNOWN_SOURCE;
  if (ip.family === 4) return ip.text;
  return `${formatIpv6([...(ip.groups ?? []).slice(0, 4), 0, 0, 0, 0])}/64`;
}

/**
 * An address or CIDR range as an operator writes it (`10.0.0.5`, `10.1.0.0/16`, `2001:db8::/48`),
 * in canonical form (`10.0.0.5`, `10.1.0.0/16`, `2001:db8::/48`); null when it is not one.
 */
export function parseAddressRange(entry: string): { readonly family: 4 | 6; readonly network: string; readonly prefix: number; readonly text: string } | null {
  const trimmed = entry.trim();
  const slash = trimmed.indexOf('/');
  const address = slash === -1 ? trimmed : trimmed.slice(0, slash);
  const bits = slash === -1 ? null : trimmed.slice(slash + 1);
  if (address.includes('%')) return null;
  const ip = normalizeIp(address);
  if (ip === null || (ip.family === 4 && isIP(address) === 6 && bits !== null)) return null; // no prefixes on mapped forms
  const max = ip.family === 4 ? 32 : 128;
  if (bits !== null && !/^\d{1,3}$/.test(bits)) return null;
  const prefix = bits === null ? max : Number(bits);
  if (prefix > max) return null;
  return { family: ip.family, network: ip.text, prefix, text: bits === null ? ip.text : `${ip.text}/${prefix}` };
}

/** Whether an address is in one of the given ranges (checked with node:net's BlockList). */
export interface AddressMatcher {
  matches(address: string | null | undefined): boolean;
}

/** A matcher for a list of addresses / CIDR ranges; entries that are not one are ignored (validate first). */
export function addressMatcher(entries: readonly string[]): AddressMatcher {
  const list = new BlockList();
  let empty = true;
  for (const entry of entries) {
    const range = parseAddressRange(entry);
    if (range === null) continue;
    list.addSubnet(range.network, range.prefix, range.family === 4 ? 'ipv4' : 'ipv6');
    empty = false;
  }
  return {
    matches(address) {
      if (empty) return false;
      const ip = normalizeIp(address);
      if (ip === null) return false;
      return list.check(ip.text, ip.family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/**
 * The address a ValidateUser attempt is counted against: the client-declared IPAddress when the
 * request comes from one of the application's trusted callers and IPAddress is a valid IP; the
 * request's own source otherwise (IPAddress is then only recorded, never trusted).
 */
export function attemptAddress(requestSource: string, declaredIp: string | null, trustedCallers: readonly string[]): string {
  if (trustedCallers.length === 0 || normalizeIp(declaredIp) === null) return requestSource;
  return addressMatcher(trustedCallers).matches(requestSource) ? (declaredIp ?? requestSource) : requestSource;
}
