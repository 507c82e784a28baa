/**
 * Who a request on one of our servers comes from (security review, finding 5; decision 0162): the socket's peer,
 * unless TRUST_PROXY says a proxy in front forwards the client's address in `X-Forwarded-For`. Each proxy appends the
 * address it saw, so the header is read from the right: with N hops trusted, the client is the Nth entry from the
 * right (the socket's peer being the last proxy); with the proxies' CIDRs, the first entry from the right that is
 * not one of them. Entries left of that are the client's own words and never believed. An entry that is not an
 * address ends the walk at the last one the proxies vouched for.
 *
 * The key a limit counts by (`addressKey`): an IPv4 address (an IPv4-mapped IPv6 one written as IPv4), or an IPv6
 * address's /64: one host commonly has a whole /64, so counting single IPv6 addresses would count nothing.
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { BlockList, isIP } from 'node:net';
import type { TrustProxy } from './config/trust-proxy.js';

export type { TrustProxy } from './config/trust-proxy.js';

export const NO_PROXY: TrustProxy = { kind: 'off' };

const lists = new WeakMap<TrustProxy, BlockList>();

function blockListOf(trust: Extract<TrustProxy, { kind: 'cidrs' }>): BlockList {
  let list = lists.get(trust);
  if (list === undefined) {
    list = new BlockList();
    for (const cidr of trust.cidrs) {
      const [address = '', prefix = ''] = cidr.split('/');
      list.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
    }
    lists.set(trust, list);
  }
  return list;
}

/** An address as written by Node or a proxy, normalised (no IPv4-mapped prefix, no brackets or zone); undefined: none. */
function normalise(text: string | undefined): string | undefined {
  const t = text?.trim().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (t === undefined || isIP(t) === 0) return undefined;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(t)?.[1];
  return mapped ?? t.toLowerCase();
}

/** Whether `address` is one of the trusted proxies'. */
export function isTrustedProxy(address: string | undefined, trust: TrustProxy): boolean {
  const a = normalise(address);
  if (a === undefined || trust.kind !== 'cidrs') return false;
  return blockListOf(trust).check(a, isIP(a) === 6 ? 'ipv6' : 'ipv4');
}

/** The client's address for a limit (its /64 for IPv6), from the socket's peer and the X-Forwarded-For header. */
export function clientAddressOf(remote: string | undefined, forwardedFor: string | undefined, trust: TrustProxy): string {
  return addressKey(clientIp(remote, forwardedFor, trust));
}

function clientIp(remote: string | undefined, forwardedFor: string | undefined, trust: TrustProxy): string | undefined {
  const peer = normalise(remote);
  if (trust.kind === 'off' || forwardedFor === undefined) return peer;
  // The hops, rightmost first: the socket's peer, then what each proxy appended.
  const chain = [peer, ...forwardedFor.split(',').map(normalise).reverse()];
  if (trust.kind === 'hops') {
    // Hop i's word is believed when i proxies vouch for it; the client is `hops` entries from the right.
    let client = peer;
    for (let i = 1; i <= trust.hops && i < chain.length; i += 1) {
      const next = chain[i];
      if (next === undefined) break;
      client = next;
    }
    return client;
  }
  let client = peer;
  for (let i = 0; i < chain.length; i += 1) {
    const here = chain[i];
    if (here === undefined) break;
    client = here;
    if (!isTrustedProxy(here, trust)) break;
  }
  return client;
}

/** What a limit counts by: the address, an IPv6 one by its /64; `unknown` when there is none. */
export function addressKey(address: string | undefined): string {
  const a = normalise(address);
  if (a === undefined) return 'unknown';
  if (isIP(a) === 4) return a;
  return `${expand(a).slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** The eight groups of an IPv6 address (`::` filled in; an embedded IPv4 tail as two groups). */
function expand(a: string): string[] {
  let text = a;
  const v4 = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text)?.[1];
  if (v4 !== undefined) {
    const [b0 = 0, b1 = 0, b2 = 0, b3 = 0] = v4.split('.').map(Number);
    text = `${text.slice(0, -v4.length)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right];
}

/**
 * The client address of a request on one of our Hono servers (the public server; the dashboard may use it), by
 * TRUST_PROXY (`trust`, default off: the socket's peer). Only the last X-Forwarded-For header is read when several
 * came (Node joins them with ", " in order, which the right-to-left walk handles alike).
 */
export function clientAddress(c: Context<{ Bindings: HttpBindings }>, trust: TrustProxy = NO_PROXY): string {
  return clientAddressOf(c.env.incoming.socket.remoteAddress, c.req.header('x-forwarded-for'), trust);
}
