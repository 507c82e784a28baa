/**
 * Webhook events as they came, per tenant, bounded in count and age (WEBHOOK_EVENTS_MAX,
 * WEBHOOK_EVENTS_MAX_AGE_DAYS): what `calls events` lists, and what makes a redelivery harmless (an event whose
 * id is already kept is not recorded or worked again).
 *
 * Keys (the tenant's hash tag, docs/decisions/0038): `<base>:webhooks:events:{<tenant>}` (HASH id -> the stored
 * event, JSON) and `<base>:webhooks:events:{<tenant>}:at` (ZSET id by receipt time). Both are written in one MULTI.
 *
 * Reading is tolerant (the payload's shape is not shown, collections-api.md "Webhooks"): `requestMetadata` is
 * taken from the top level or from the first top-level object that carries it; the event id is the top-level
 * (or that object's) `id`, `eventId` or `event_id`, else a digest of the body, so an identical body sent again is
 * the same event.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { tenantKey } from '../redis/keys.js';

export const WEBHOOK_OUTCOMES = ['settled', 'unmatched', 'unchanged'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

export const storedEventSchema = z.object({
  id: z.string(),
  /** Where the id came from: the payload's own field, or a digest of the body. */
  idFrom: z.enum(['payload', 'digest']),
  receivedAt: z.number(),
  body: z.unknown(),
  /** What the worker made of it, once it did. */
  outcome: z.enum(WEBHOOK_OUTCOMES).optional(),
  detail: z.string().optional(),
  /** The calls it settled: campaign and number. */
  settled: z.array(z.object({ campaignId: z.string(), number: z.string() })).optional(),
  handledAt: z.number().optional(),
});
export type StoredEvent = z.infer<typeof storedEventSchema>;

const ID_FIELDS = ['id', 'eventId', 'event_id'] as const;
const MAX_ID_LENGTH = 200;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The object that carries `requestMetadata`: the payload itself, or the first of its top-level objects that does. */
function carrierOf(body: unknown): Record<string, unknown> | undefined {
  if (!isObject(body)) return undefined;
  if (isObject(body['requestMetadata'])) return body;
  for (const value of Object.values(body)) if (isObject(value) && isObject(value['requestMetadata'])) return value;
  return undefined;
}

/** `requestMetadata` at the top level or in one nested object, or undefined. */
export function findRequestMetadata(body: unknown): Record<string, unknown> | undefined {
  const carrier = carrierOf(body);
  const meta = carrier?.['requestMetadata'];
  return isObject(meta) ? meta : undefined;
}

/** The event's own id (top level, else the metadata's carrier), or a digest of the raw body. */
export function eventIdOf(body: unknown, raw: Uint8Array): { id: string; idFrom: 'payload' | 'digest' } {
  for (const place of [body, carrierOf(body)]) {
    if (!isObject(place)) continue;
    for (const field of ID_FIELDS) {
      const v = place[field];
      if ((typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isFinite(v))) {
        const id = String(v).trim();
        if (id.length <= MAX_ID_LENGTH) return { id, idFrom: 'payload' };
        return { id: `sha256:${createHash('sha256').update(id).digest('hex').slice(0, 40)}`, idFrom: 'payload' };
      }
    }
  }
  return { id: `sha256:${createHash('sha256').update(raw).digest('hex').slice(0, 40)}`, idFrom: 'digest' };
}

export interface WebhookEventsOptions {
  maxCount: number;
  maxAgeMs: number;
}

export class WebhookEvents {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly options: WebhookEventsOptions,
  ) {}

  private keys(tenant: string): { events: string; at: string } {
    return { events: tenantKey(this.prefix, tenant, ['webhooks', 'events']), at: tenantKey(this.prefix, tenant, ['webhooks', 'events'], 'at') };
  }

  /** Keeps the event unless one with its id is kept already (then `duplicate`); drops what is past the bounds. */
  async record(tenant: string, event: Pick<StoredEvent, 'id' | 'idFrom' | 'body'>, now = Date.now()): Promise<{ duplicate: boolean }> {
    const k = this.keys(tenant);
    const stored = storedEventSchema.parse({ ...event, receivedAt: now });
    const res = await this.redis.multi().hsetnx(k.events, stored.id, JSON.stringify(stored)).zadd(k.at, 'NX', now, stored.id).exec();
    const added = res?.[0]?.[1] === 1;
    await this.trim(tenant, now);
    return { duplicate: !added };
  }

  /** Drops events older than the age bound, then the oldest beyond the count bound. */
  async trim(tenant: string, now = Date.now()): Promise<number> {
    const k = this.keys(tenant);
    const old = await this.redis.zrangebyscore(k.at, '-inf', now - this.options.maxAgeMs);
    const size = await this.redis.zcard(k.at);
    const excess = size - old.length - this.options.maxCount;
    const over = excess > 0 ? await this.redis.zrange(k.at, old.length, old.length + excess - 1) : [];
    const gone = [...old, ...over];
    if (gone.length === 0) return 0;
    await this.redis.multi().zrem(k.at, ...gone).hdel(k.events, ...gone).exec();
    return gone.length;
  }

  async get(tenant: string, id: string): Promise<StoredEvent | undefined> {
    const raw = await this.redis.hget(this.keys(tenant).events, id);
    return raw === null ? undefined : parseStored(raw, `${this.keys(tenant).events} ${id}`);
  }

  /** Records what the worker made of the event (the event job is its only writer). */
  async setOutcome(tenant: string, id: string, result: Pick<StoredEvent, 'outcome' | 'detail' | 'settled'>, now = Date.now()): Promise<void> {
    const current = await this.get(tenant, id);
    if (!current) return;
    const next = storedEventSchema.parse({ ...current, ...result, handledAt: now });
    await this.redis.hset(this.keys(tenant).events, id, JSON.stringify(next));
  }

  /** The tenant's kept events, newest first. */
  async list(tenant: string, limit = 100): Promise<StoredEvent[]> {
    const k = this.keys(tenant);
    const ids = await this.redis.zrevrange(k.at, 0, limit - 1);
    if (ids.length === 0) return [];
    const values = await this.redis.hmget(k.events, ...ids);
    return values.flatMap((raw, i) => (raw === null ? [] : [parseStored(raw, `${k.events} ${ids[i] ?? ''}`)]));
  }
}

function parseStored(raw: string, where: string): StoredEvent {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`corrupt value in ${where}: not JSON`);
  }
  const parsed = storedEventSchema.safeParse(json);
  if (!parsed.success) throw new Error(`corrupt value in ${where}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
