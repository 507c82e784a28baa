/**
 * OUTBOUND_ALLOWED_NETWORKS: networks a URL that came with a tenant may reach although they are private, loopback,
 * link-local or otherwise not the public internet (src/notify/address-guard.ts refuses those by default). Entries
 * separated by commas, spaces or newlines, each a CIDR (`127.0.0.0/8`, `10.20.0.0/16`, `fd00:1::/64`) or one address
 * (a /32 or /128).
 */
import { isIP } from 'node:net';

export interface Network {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** The networks of the setting, or the problems (one line each, naming the entry). */
export function parseNetworks(text: string): { networks: Network[]; problems: string[] } {
  const networks: Network[] = [];
  const problems: string[] = [];
  const entries = text.split(/[\s,]+/).filter((e) => e !== '');
  entries.forEach((entry, i) => {
    const [address = '', prefixText, ...rest] = entry.split('/');
    const version = isIP(address);
    const family = version === 6 ? 'ipv6' : 'ipv4';
    const max = version === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (version === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= max)) {
      problems.push(`entry ${i + 1} (${entry.slice(0, 60)}): not a network: an address, or address/prefix such as 127.0.0.0/8 or fd00::/8`);
      return;
    }
    networks.push({ address, prefix, family });
  });
  return { networks, problems };
}
