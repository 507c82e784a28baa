/**
 * Where a URL that came with a tenant (its `notify.url`) may connect (decision 0176): not to this machine, a private
 * network, a link-local address (169.254.169.254 is the cloud's metadata service), multicast or any other address
 * that is not the public internet, unless OUTBOUND_ALLOWED_NETWORKS lists it (src/config/networks.ts).
 *
 * The check is made when a connection is opened, on the address it is opened to: the host is resolved here, each
 * address checked, and the socket connected to the address that passed (never resolved again), so a name that
 * resolves to a public address when checked and a private one when used (DNS rebinding) gets nowhere. Literal
 * addresses in any form (`127.1`, `0x7f.1`, `[::ffff:127.0.0.1]`) are what the resolver makes of them, and IPv6
 * addresses that carry an IPv4 one (IPv4-mapped, NAT64, 6to4) are judged by the IPv4 address.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { Network } from '../config/networks.js';

/** Special-purpose ranges (IANA's registries), none of them the public internet. */
const REFUSED: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", the unspecified address
  ['10.0.0.0', 8, 'ipv4'], // private
  ['100.64.0.0', 10, 'ipv4'], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['169.254.0.0', 16, 'ipv4'], // link-local: cloud metadata services
  ['172.16.0.0', 12, 'ipv4'], // private
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.88.99.0', 24, 'ipv4'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'ipv4'], // private
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and the broadcast address
  ['::', 128, 'ipv6'], // unspecified
  ['::1', 128, 'ipv6'], // loopback
  ['::', 96, 'ipv6'], // IPv4-compatible (deprecated)
  ['100::', 64, 'ipv6'], // discard
  ['2001::', 23, 'ipv6'], // IETF protocol assignments (Teredo among them)
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['fc00::', 7, 'ipv6'], // unique local
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ['ff00::', 8, 'ipv6'], // multicast
];

/** Why a connection was not opened: the only error whose class is `blocked address`. */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_BLOCKED_ADDRESS';
  constructor() {
    super('the address is not a public one, and OUTBOUND_ALLOWED_NETWORKS does not list it');
    this.name = 'BlockedAddressError';
  }
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), if any. */
export function embeddedIpv4(address: string): string | undefined {
  const words = expandIpv6(address);
  if (words === undefined) return undefined;
  const v4 = (hi: number, lo: number): string => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  const zeros = (from: number, to: number): boolean => words.slice(from, to).every((w) => w === 0);
  if (zeros(0, 5) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && zeros(2, 6)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part and a zone allowed), or undefined. */
function expandIpv6(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '').toLowerCase();
  if (isIP(text) !== 6) return undefined;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((w) => parseInt(w, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

export class AddressGuard {
  private readonly refused = new BlockList();
  private readonly allowed = new BlockList();

  constructor(allowedNetworks: readonly Network[] = []) {
    for (const [address, prefix, family] of REFUSED) this.refused.addSubnet(address, prefix, family);
    for (const n of allowedNetworks) this.allowed.addSubnet(n.address, n.prefix, n.family);
  }

  /** Whether a connection to `address` (an IP address) may be opened. */
  allows(address: string): boolean {
    const family = isIP(address) === 6 ? 'ipv6' : isIP(address) === 4 ? 'ipv4' : undefined;
    if (family === undefined) return false;
    if (this.allowed.check(address, family)) return true;
    const inner = family === 'ipv6' ? embeddedIpv4(address) : undefined;
    if (inner !== undefined) return this.allowed.check(inner, 'ipv4') || !this.refused.check(inner, 'ipv4');
    return !this.refused.check(address, family);
  }

  /** Whether OUTBOUND_ALLOWED_NETWORKS lists `address` (an IP address): the operator let tenants reach it. */
  listed(address: string): boolean {
    const family = isIP(address) === 6 ? 'ipv6' : isIP(address) === 4 ? 'ipv4' : undefined;
    return family !== undefined && this.allowed.check(address, family);
  }

  /** The first address `host` resolves to that may be connected to; throws BlockedAddressError when none may. */
  async resolve(host: string): Promise<string> {
    const literal = host.replace(/^\[|\]$/g, '');
    const addresses = isIP(literal) !== 0 ? [literal] : (await lookup(literal, { all: true, verbatim: true })).map((a) => a.address);
    const pass = addresses.find((a) => this.allows(a));
    if (pass === undefined) throw new BlockedAddressError();
    return pass;
  }

  /**
   * An undici dispatcher whose every new connection is opened through `resolve`: to the address checked, with the
   * host name kept for TLS (SNI and the certificate's check) and the Host header. One per delivery attempt.
   */
  agent(o: { connectTimeoutMs: number }): Agent {
    const base = buildConnector({ timeout: o.connectTimeoutMs });
    return new Agent({
      connections: 1,
      connect: (options, callback) => {
        this.resolve(options.hostname).then(
          (address) => {
            const servername = options.servername ?? serverNameOf(options.hostname);
            base({ ...options, hostname: address, ...(servername !== undefined ? { servername } : {}) }, callback);
          },
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
        );
      },
    });
  }
}

/** The TLS server name of a host: none for an IP address (SNI takes names only). */
function serverNameOf(host: string): string | undefined {
  const h = host.replace(/^\[|\]$/g, '');
  return isIP(h) === 0 ? h : undefined;
}
