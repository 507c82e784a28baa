/**
 * TRUST_PROXY (security review, finding 5; decision 0162): whether the public server believes the `X-Forwarded-For`
 * of the proxy in front of it, and how far. Off by default: the client is the socket's peer. A number of hops (1-10):
 * that many proxies, each appending the address it saw, stand in front; the client is that many entries from the
 * right of the header (the socket's peer counted). A list of CIDRs (or addresses): the proxies' addresses; the client
 * is the first address from the right that is not one of them. Parsed here, with every other setting; matched by
 * src/client-address.ts.
 */
import { isIP } from 'node:net';

export type TrustProxy = { kind: 'off' } | { kind: 'hops'; hops: number } | { kind: 'cidrs'; cidrs: string[] };

export const TRUST_PROXY_RULE = 'off (default), a number of proxies in front (1-10), or the proxies\' addresses as CIDRs, comma-separated (10.0.0.0/8,fd00::/8)';

/** A CIDR with its prefix written out (`192.168.1.4` -> `192.168.1.4/32`), or undefined when it is none. */
function cidrOf(text: string): string | undefined {
  const [address = '', prefix, extra] = text.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (prefix === undefined) return `${address}/${max}`;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return undefined;
  return `${address}/${Number(prefix)}`;
}

/** Parses TRUST_PROXY; throws a message naming the rule (the value is not secret, and is quoted). */
export function parseTrustProxy(text: string | undefined): TrustProxy {
  const t = (text ?? '').trim();
  if (t === '' || /^(off|false|no|0)$/i.test(t)) return { kind: 'off' };
  if (/^\d+$/.test(t)) {
    const hops = Number(t);
    if (hops >= 1 && hops <= 10) return { kind: 'hops', hops };
    throw new Error(`"${t}": ${TRUST_PROXY_RULE}`);
  }
  const parts = t.split(',').map((p) => p.trim());
  const cidrs = parts.map(cidrOf);
  const bad = parts.find((_, i) => cidrs[i] === undefined);
  if (bad !== undefined) throw new Error(`"${bad.slice(0, 60)}" is not an address or CIDR: ${TRUST_PROXY_RULE}`);
  return { kind: 'cidrs', cidrs: cidrs as string[] };
}
