/** A browser, as far as connect links go: follows redirects one by one (redirect: 'manual'), keeping each hop. */
import { createServer } from 'node:net';
import { makeConnectLink, type MadeLink } from '../../src/connect/index.js';
import type { Rig } from '../helpers/rig.js';

export interface Hop {
  url: string;
  status: number;
  location?: string;
}

export interface Visit {
  hops: Hop[];
  status: number;
  text: string;
  url: string;
}

/** Opens `url` and follows Location headers (at most 10), as a browser does. */
export async function browse(url: string): Promise<Visit> {
  const hops: Hop[] = [];
  let current = url;
  for (let i = 0; i < 10; i += 1) {
    const res = await fetch(current, { redirect: 'manual' });
    const location = res.headers.get('location') ?? undefined;
    hops.push({ url: current, status: res.status, ...(location ? { location } : {}) });
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      current = new URL(location, current).href;
      continue;
    }
    return { hops, status: res.status, text: await res.text(), url: current };
  }
  throw new Error(`too many redirects from ${url}`);
}

/** A free TCP port on 127.0.0.1 (the public server's, so PUBLIC_URL can name it before the worker starts). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A connect link for `tenant` of the rig, made and recorded as the CLI makes one (PLATFORM_TOKEN_KEY, PUBLIC_URL of its env). */
export async function linkOf(rig: Rig, tenant: string, o: { ttlMs?: number; reconnect?: boolean } = {}): Promise<MadeLink> {
  const { PLATFORM_TOKEN_KEY: tokenKey, PUBLIC_URL: publicUrl } = rig.env;
  if (tokenKey === undefined || publicUrl === undefined) throw new Error('the rig has no PLATFORM_TOKEN_KEY or PUBLIC_URL');
  return makeConnectLink({ redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, tokenKey, publicUrl, tenant: rig.app.tenant(tenant) }, tenant, { ttlMs: o.ttlMs ?? 3_600_000, reconnect: o.reconnect ?? false, by: 'test' });
}
