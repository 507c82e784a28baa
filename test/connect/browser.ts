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

/**
 * A browser's cookie jar, as far as connect links need one: `Set-Cookie` name=value kept per host (cookies do not
 * tell ports apart), dropped by `Max-Age=0`, sent back as `Cookie` to that host. Attributes are otherwise not judged
 * (the tests read them from the headers themselves).
 */
export class Browser {
  readonly #jar = new Map<string, Map<string, string>>();

  cookies(host: string): ReadonlyMap<string, string> {
    return this.#jar.get(host) ?? new Map();
  }

  /** Opens `url` and follows Location headers (at most 10), as a browser does, with this browser's cookies. */
  async browse(url: string): Promise<Visit> {
    const hops: Hop[] = [];
    let current = url;
    for (let i = 0; i < 10; i += 1) {
      const res = await this.fetch(current);
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

  /** One request (no redirect followed), cookies sent and kept. */
  async fetch(url: string): Promise<Response> {
    const host = new URL(url).hostname;
    const jar = this.#jar.get(host) ?? new Map<string, string>();
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { redirect: 'manual', ...(cookie ? { headers: { cookie } } : {}) });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((p) => p.trim());
      const at = pair.indexOf('=');
      if (at <= 0) continue;
      if (attributes.some((a) => /^max-age=0$/i.test(a))) jar.delete(pair.slice(0, at));
      else jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    this.#jar.set(host, jar);
    return res;
  }
}

/** Opens `url` in a fresh browser (no cookies yet) and follows Location headers (at most 10). */
export async function browse(url: string): Promise<Visit> {
  return new Browser().browse(url);
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
