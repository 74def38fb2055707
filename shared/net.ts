/**
 * Network address shapes both daemons read and write: `host:port` with
 * IPv6 literals in brackets (RFC 3986 §3.2.2), a TCP peer as a client
 * address, address blocks (CIDR), and the bearer-token shape of RFC 6750
 * §2.1 (`b64token`). Parsing of addresses is ipaddr.js's.
 */
import ipaddr from 'ipaddr.js';

/** A host (name, IPv4, or IPv6 without brackets) and a port. */
export interface HostPort {
  host: string;
  port: number;
}

/** `host:port`, an IPv6 literal in brackets (`[::1]:8090`). */
export function formatHostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** `scheme://host:port` of a listening socket's address (IPv6 in brackets). */
export function originOf(scheme: string, address: HostPort): string {
  return `${scheme}://${formatHostPort(address.host, address.port)}`;
}

/**
 * Parses a listen address: `host:port`, `[v6]:port` or a bare port number
 * (then `defaultHost`).
 *
 * @returns the address, or `undefined` when it is none of those shapes or
 *   the port is outside 0–65535 (0: any free port).
 */
export function parseListen(value: unknown, defaultHost = '127.0.0.1'): HostPort | undefined {
  if (typeof value === 'number') value = String(value);
  if (typeof value !== 'string') return undefined;
  const m = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(value.trim());
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const host = m[1] ? m[1].replace(/^\[|\]$/g, '') : defaultHost;
  return { host, port };
}

/**
 * The client address of a TCP peer as access rules and logs see it: an
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.7`) is its IPv4 address.
 *
 * @returns the address, or `undefined` when the socket has none (closed).
 */
export function clientAddress(remoteAddress: string | undefined): string | undefined {
  if (!remoteAddress) return undefined;
  if (!ipaddr.isValid(remoteAddress)) return remoteAddress;
  return ipaddr.process(remoteAddress).toString();
}

/** An address block: a CIDR (`10.0.0.0/8`, `fd00::/8`) or one address (a /32 or /128). */
export type AddressBlock = [ipaddr.IPv4 | ipaddr.IPv6, number];

/**
 * Parses an address block; `undefined` when `text` is not one. An
 * IPv4-mapped IPv6 block (`::ffff:192.0.2.0/120`, RFC 4291 §2.5.5.2) is
 * its IPv4 block, as client addresses are (see {@link clientAddress}).
 */
export function parseAddressBlock(text: string): AddressBlock | undefined {
  const s = text.trim();
  let block: AddressBlock;
  try {
    if (s.includes('/')) block = ipaddr.parseCIDR(s);
    else {
      const a = ipaddr.parse(s);
      block = [a, a.kind() === 'ipv4' ? 32 : 128];
    }
  } catch {
    return undefined;
  }
  const [a, bits] = block;
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(a as ipaddr.IPv6).toIPv4Address(), bits - 96];
  return block;
}

/**
 * A list of address blocks as a matcher of client addresses (an
 * IPv4-mapped IPv6 address matches as its IPv4 address).
 *
 * @throws TypeError for an entry that is not an address block (config
 *   validation refuses those first)
 */
export function addressMatcher(blocks: string[]): (address: string | undefined) => boolean {
  const parsed = blocks.map((b) => {
    const block = parseAddressBlock(b);
    if (!block) throw new TypeError(`not an address or CIDR block: ${b}`);
    return block;
  });
  return (address) => {
    if (!address || !ipaddr.isValid(address)) return false;
    const a = ipaddr.process(address);
    return parsed.some(([net, bits]) => a.kind() === net.kind() && a.match(net, bits));
  };
}

/**
 * True when a listen host reaches this machine only: an IP literal in a
 * loopback block (`127.0.0.0/8`, `::1`, an IPv4-mapped `::ffff:127.x`) or
 * the name `localhost` / `*.localhost` (RFC 6761 §6.3). Any other name is
 * not looked up and counts as not loopback; so do the wildcards `0.0.0.0`
 * and `::` (every interface).
 */
export function isLoopbackHost(host: string): boolean {
  if (ipaddr.isValid(host)) return ipaddr.process(host).range() === 'loopback';
  return /^(.+\.)?localhost\.?$/i.test(host);
}

/** A bearer token (RFC 6750 §2.1 `b64token`): letters, digits and `-._~+/`, then any `=`. */
export const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The token of an `Authorization: Bearer <token>` value (RFC 6750 §2.1;
 * the scheme compares case-insensitively).
 *
 * @returns the token, or `undefined` when the value is not of that shape
 */
export function bearerTokenOf(authorization: string | undefined): string | undefined {
  const m = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  return m && BEARER_TOKEN.test(m[1]) ? m[1] : undefined;
}
