/**
 * The connect links a tenant has outstanding (security review, finding 1; decision 0160): each link made is recorded
 * here by its id (the nonce its signed token carries), and only a recorded link opens. A link that connects is taken
 * from the record at once (HDEL: one caller wins), so it is spent; revoking one deletes its record. One Redis hash per
 * tenant, `<base>:connect:{<tenant>}:links`, field = link id, value = JSON (no token, no URL: the link cannot be
 * rebuilt from Redis).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { tenantKey } from '../redis/keys.js';

/** How long a link may work: `--expires` and the API's `expires` are at most this. */
export const MAX_LINK_MS = 30 * 86_400_000;

/** A link id as the CLI and the API show it (the nonce of its token: 9 random bytes, base64url). */
export const LINK_ID = /^[A-Za-z0-9_-]{12}$/;

const recordSchema = z.object({
  /** Epoch ms: the link stops working then. */
  expiresAt: z.number().int(),
  /** Asked for as a reconnect: it may replace the tenant's connection (another organisation included). */
  reconnect: z.boolean(),
  createdAt: z.number().int(),
  /** Who made it: `cli`, or `api:<key name>`. */
  by: z.string().max(120),
});

export interface LinkRecord extends z.infer<typeof recordSchema> {
  id: string;
}

export class LinkStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {}

  key(tenant: string): string {
    return tenantKey(this.prefix, tenant, 'connect', 'links');
  }

  /** Records a link just made; links past their expiry are dropped from the hash on the way. */
  async add(tenant: string, link: LinkRecord): Promise<void> {
    const { id, ...rest } = link;
    const key = this.key(tenant);
    const expired = (await this.all(tenant)).filter((l) => l.expiresAt <= this.now()).map((l) => l.id);
    const multi = this.redis.multi().hset(key, id, JSON.stringify(rest));
    if (expired.length > 0) multi.hdel(key, ...expired);
    // The hash outlives its longest link by a day at most (links live 30 days at most).
    await multi.pexpire(key, MAX_LINK_MS + 86_400_000).exec();
  }

  /** The outstanding (recorded, unexpired) link `id`, or undefined. */
  async get(tenant: string, id: string): Promise<LinkRecord | undefined> {
    if (!LINK_ID.test(id)) return undefined;
    const raw = await this.redis.hget(this.key(tenant), id);
    const link = raw === null ? undefined : parse(id, raw);
    return link !== undefined && link.expiresAt > this.now() ? link : undefined;
  }

  /** The outstanding links, oldest first. */
  async list(tenant: string): Promise<LinkRecord[]> {
    return (await this.all(tenant)).filter((l) => l.expiresAt > this.now()).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /**
   * Spends link `id`: its record is deleted, and only the caller whose HDEL deleted it gets it back (two completions
   * of one link at once: one wins). Undefined when it was spent, revoked or expired meanwhile.
   */
  async take(tenant: string, id: string): Promise<LinkRecord | undefined> {
    const link = await this.get(tenant, id);
    if (link === undefined) return undefined;
    return (await this.redis.hdel(this.key(tenant), id)) === 1 ? link : undefined;
  }

  /** Puts back a link taken by a completion that then failed (Redis, the chain's lock): it was not used. */
  async restore(tenant: string, link: LinkRecord): Promise<void> {
    const { id, ...rest } = link;
    await this.redis.hset(this.key(tenant), id, JSON.stringify(rest));
  }

  /** Revokes link `id`: false when no such link is outstanding. */
  async revoke(tenant: string, id: string): Promise<boolean> {
    if ((await this.get(tenant, id)) === undefined) return false;
    return (await this.redis.hdel(this.key(tenant), id)) === 1;
  }

  /** Revokes every outstanding link of the tenant (its connection was revoked); how many there were. */
  async revokeAll(tenant: string): Promise<number> {
    const n = (await this.list(tenant)).length;
    await this.redis.del(this.key(tenant));
    return n;
  }

  private async all(tenant: string): Promise<LinkRecord[]> {
    const fields = await this.redis.hgetall(this.key(tenant));
    return Object.entries(fields).flatMap(([id, raw]) => {
      const link = parse(id, raw);
      return link === undefined ? [] : [link];
    });
  }
}

function parse(id: string, raw: string): LinkRecord | undefined {
  try {
    const r = recordSchema.safeParse(JSON.parse(raw));
    return r.success ? { id, ...r.data } : undefined;
  } catch {
    return undefined;
  }
}
