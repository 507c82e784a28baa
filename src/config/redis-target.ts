/**
 * Where Redis is (issue 13): one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES, seed nodes). Managed
 * Redis: `rediss://` for TLS, `user:password@` for an ACL user. Pure: parsed here, connected in src/redis.
 *
 * REDIS_CLUSTER_NODES is a comma-separated list of seed nodes, each `host:port` or a `redis://` / `rediss://` URL
 * (the node-list convention of ioredis' Cluster and of most hosted Redis consoles). The nodes of one cluster share
 * TLS and credentials: they come from the URL entries (which must agree), else from REDIS_URL.
 */

export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisTarget {
  /** The setting that names this Redis, for messages. */
  setting: 'REDIS_URL' | 'REDIS_CLUSTER_NODES';
  /** Single server: its URL (may hold a password: never print it, use `display`). */
  url?: string;
  /** Cluster: the seed nodes. */
  nodes?: RedisNode[];
  username?: string;
  password?: string;
  tls: boolean;
  /** Where, without any password: for messages and logs. */
  display: string;
}

/** A URL without its password (`redis://user:***@host:port`). */
export function safeRedisUrl(url: string): string {
  return url.replace(/\/\/([^@/:]*)(:[^@/]*)?@/, (_m, user: string, pass: string | undefined) => `//${user}${pass === undefined ? '' : ':***'}@`);
}

interface Auth {
  tls: boolean;
  username?: string;
  password?: string;
}

function authOfUrl(u: URL): Auth {
  return {
    tls: u.protocol === 'rediss:',
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
  };
}

const sameAuth = (a: Auth, b: Auth): boolean => a.tls === b.tls && a.username === b.username && a.password === b.password;

/** Parses a seed list; an error names the entry by position (never a password). */
export function parseClusterNodes(value: string, fallbackUrl?: string): { nodes: RedisNode[]; auth: Auth } | { error: string } {
  const entries = value.split(',').map((s) => s.trim());
  if (entries.every((e) => e === '')) return { error: 'is empty: list the seed nodes as host:port,host:port (or redis:// / rediss:// URLs)' };
  const nodes: RedisNode[] = [];
  let auth: Auth | undefined;
  for (const [i, entry] of entries.entries()) {
    const where = `entry ${i + 1}`;
    if (entry === '') return { error: `${where} is empty (a stray comma?)` };
    let u: URL;
    try {
      u = new URL(entry.includes('://') ? entry : `redis://${entry}`);
    } catch {
      return { error: `${where} is not host:port nor a redis:// URL` };
    }
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return { error: `${where}: the scheme must be redis:// or rediss://` };
    if (!u.hostname) return { error: `${where} has no host` };
    if (!/^\d+$/.test(u.port || '6379') || (u.pathname !== '' && u.pathname !== '/')) return { error: `${where} is not host:port (a cluster has no database number)` };
    if (entry.includes('://')) {
      const a = authOfUrl(u);
      if (auth && !sameAuth(auth, a)) return { error: `${where}: every node URL must use the same scheme and user/password` };
      auth = a;
    }
    nodes.push({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 6379) });
  }
  if (!auth) {
    try {
      auth = fallbackUrl ? authOfUrl(new URL(fallbackUrl)) : { tls: false };
    } catch {
      auth = { tls: false };
    }
  }
  return { nodes, auth };
}

/** The Redis of an environment: the cluster when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function redisTargetOf(env: { REDIS_URL: string; REDIS_CLUSTER_NODES?: string | undefined }): RedisTarget {
  if (env.REDIS_CLUSTER_NODES === undefined) {
    const u = new URL(env.REDIS_URL);
    return { setting: 'REDIS_URL', url: env.REDIS_URL, ...authOfUrl(u), display: safeRedisUrl(env.REDIS_URL) };
  }
  const parsed = parseClusterNodes(env.REDIS_CLUSTER_NODES, env.REDIS_URL);
  if ('error' in parsed) throw new Error(`REDIS_CLUSTER_NODES ${parsed.error}`);
  const { nodes, auth } = parsed;
  const scheme = auth.tls ? 'rediss' : 'redis';
  const user = auth.username !== undefined || auth.password !== undefined ? `${auth.username ?? ''}${auth.password !== undefined ? ':***' : ''}@` : '';
  return {
    setting: 'REDIS_CLUSTER_NODES',
    nodes,
    ...auth,
    display: `cluster ${nodes.map((n) => `${scheme}://${user}${n.host}:${n.port}`).join(',')}`,
  };
}
