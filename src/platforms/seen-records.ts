/**
 * What an adapter remembers of the records it yielded, in one Redis hash per kind (under the connection's hash tag,
 * beside its tokens and limits): record id -> compact JSON, checked against its schema when read back. Platforms
 * whose deletions name an id only (QuickBooks' change feed, Zoho's 404) yield a deleted record from it. A value that
 * no longer parses is read as not remembered: the record is then read again rather than yielded wrong.
 */
import type { Redis } from 'ioredis';
import type { z } from 'zod';

export class SeenRecords<S extends Record<string, z.ZodType>> {
  constructor(
    private readonly redis: Redis,
    private readonly schemas: S,
    /** The hash of one kind (a key under the connection's tag). */
    readonly key: (kind: keyof S & string) => string,
  ) {}

  async get<K extends keyof S & string>(kind: K, ids: readonly string[]): Promise<Map<string, z.infer<S[K]>>> {
    const out = new Map<string, z.infer<S[K]>>();
    if (ids.length === 0) return out;
    const values = await this.redis.hmget(this.key(kind), ...ids);
    values.forEach((raw, i) => {
      const id = ids[i];
      if (raw === null || id === undefined) return;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        return;
      }
      const parsed = this.schemas[kind]!.safeParse(json);
      if (parsed.success) out.set(id, parsed.data as z.infer<S[K]>);
    });
    return out;
  }

  async put<K extends keyof S & string>(kind: K, entries: ReadonlyMap<string, z.infer<S[K]>>): Promise<void> {
    if (entries.size === 0) return;
    const args: string[] = [];
    for (const [id, value] of entries) args.push(id, JSON.stringify(value));
    await this.redis.hset(this.key(kind), ...args);
  }

  async forget(kind: keyof S & string, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.hdel(this.key(kind), ...ids);
  }

  /** One HSCAN step over the remembered ids of `kind`: the next cursor (`'0'` at the end) and ids. */
  async scan(kind: keyof S & string, cursor: string, count: number): Promise<{ cursor: string; ids: string[] }> {
    const [next, flat] = await this.redis.hscan(this.key(kind), cursor, 'COUNT', count);
    return { cursor: next, ids: flat.filter((_, i) => i % 2 === 0) };
  }
}
