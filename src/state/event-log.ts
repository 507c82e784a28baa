/**
 * The event log (docs/run-webhooks.md, decisions 0220 and 0221): every run-webhook event emitted, in the order it
 * was recorded, whether a receiver was configured for its tenant or not, with its delivery's state. `GET /v1/events`
 * pages it, so an app whose receiver was down finds the events it missed under the ids they were sent with (an
 * event's id is its `webhook-id`). Bounded by count (EVENTS_KEEP_MAX) and age (EVENTS_KEEP_DAYS).
 *
 * One log for the deployment, its keys under one hash tag (`<base>:log:{events}:...`, src/redis/keys.ts `logKey`),
 * so its scripts stay on one slot of a Redis Cluster, as the notify queue that carries the same events does:
 *
 *   seq      STRING  the last sequence number given (INCR): the order of record, never reused
 *   order    ZSET    event id by sequence number
 *   data     HASH    event id -> `seq|recordedAt|tenant|type|<event json>`
 *   status   HASH    event id -> the delivery's state (JSON), rewritten after each attempt
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { EVENT_DELIVERY_STATES } from '../notify/event-types.js';
import { notifyEventSchema, type NotifyEvent } from '../notify/events.js';
import { logKey } from '../redis/keys.js';
import { lastDeliverySchema } from './deliveries.js';
import { stateScript } from './script.js';
import { parseJson, StateCorruptError } from './stored.js';

/**
 * An event's delivery in the log: the last attempt as the tenant's last delivery records it (deliveries.ts), with the
 * log's states (EVENT_DELIVERY_STATES: `pending` before the first attempt, `no_receiver` when none was configured) and
 * 0 attempts before the first; `at` is when the state was written.
 */
export const eventDeliverySchema = lastDeliverySchema.omit({ eventId: true, type: true }).extend({ state: z.enum(EVENT_DELIVERY_STATES), attempts: z.number().int().nonnegative() });
export type EventDelivery = z.infer<typeof eventDeliverySchema>;

export interface LoggedEvent {
  /** Its place in the log: later events have greater numbers. */
  seq: number;
  recordedAt: number;
  tenantId: string;
  event: NotifyEvent;
  delivery: EventDelivery;
}

export interface EventLogOptions {
  /** EVENTS_KEEP_MAX: past it, the oldest go first. */
  maxCount: number;
  /** EVENTS_KEEP_DAYS in ms: older events are not listed, and go at the next add. */
  maxAgeMs: number;
}

/** Entries a page looks at, at most, before it answers (a filter that matches few answers a short page and a `next`). */
export const EVENT_PAGE_BUDGET = 2_000;

const ADD = stateScript('state/lua/events-add');
const PAGE = stateScript('state/lua/events-page');
const HEAD = /^(\d+)\|(\d+)\|([^|]*)\|([^|]*)\|/;

export class EventLog {
  private readonly keys: { seq: string; order: string; data: string; status: string };

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly options: EventLogOptions,
  ) {
    const k = (part: string): string => logKey(prefix, 'events', part);
    this.keys = { seq: k('seq'), order: k('order'), data: k('data'), status: k('status') };
  }

  /** Records an event (one Lua call, trimming the log). An id kept already is not recorded again: `added` false. */
  async record(event: NotifyEvent, delivery: Omit<EventDelivery, 'at'>, now = Date.now()): Promise<{ seq: number; added: boolean }> {
    const k = this.keys;
    const reply = (await ADD.run(
      this.redis,
      [k.seq, k.order, k.data, k.status],
      [event.id, now, event.data.tenantId, event.type, JSON.stringify(event), JSON.stringify({ ...delivery, at: now }), this.options.maxCount, now - this.options.maxAgeMs],
    )) as [number, number];
    return { added: Number(reply[0]) === 1, seq: Number(reply[1]) };
  }

  /** Writes the delivery's state of a kept event (nothing for one gone from the log): true when it was kept. */
  async setDelivery(eventId: string, delivery: Omit<EventDelivery, 'at'>, now = Date.now()): Promise<boolean> {
    const k = this.keys;
    if ((await this.redis.hexists(k.data, eventId)) === 0) return false;
    await this.redis.hset(k.status, eventId, JSON.stringify({ ...delivery, at: now }));
    return true;
  }

  /** One kept event (undefined: never recorded, or past the bounds). */
  async get(eventId: string, now = Date.now()): Promise<LoggedEvent | undefined> {
    const [raw, delivery] = await Promise.all([this.redis.hget(this.keys.data, eventId), this.redis.hget(this.keys.status, eventId)]);
    if (raw === null) return undefined;
    const e = this.decode(eventId, raw, delivery ?? '');
    return e.recordedAt >= now - this.options.maxAgeMs ? e : undefined;
  }

  /**
   * Events recorded after `after` (a sequence number; 0: from the oldest kept), oldest first, of one type and of
   * some tenants when given, up to `limit`. `last` is the sequence number of the last entry looked at (the next
   * page starts after it), `more` whether entries follow it. A page looks at EVENT_PAGE_BUDGET entries at most.
   * `newestFirst`: the events recorded before `after` (0: from the newest), newest first.
   */
  async page(o: { after?: number; limit: number; type?: string; tenants?: readonly string[]; now?: number; newestFirst?: boolean }): Promise<{ items: LoggedEvent[]; last: number; more: boolean }> {
    if (o.tenants !== undefined && o.tenants.length === 0) return { items: [], last: o.after ?? 0, more: false };
    const k = this.keys;
    const now = o.now ?? Date.now();
    const flat = (await PAGE.run(
      this.redis,
      [k.order, k.data, k.status],
      [o.after ?? 0, o.limit, o.type ?? '', (o.tenants ?? []).join(','), now - this.options.maxAgeMs, EVENT_PAGE_BUDGET, o.newestFirst === true ? 'desc' : 'asc'],
    )) as string[];
    const items: LoggedEvent[] = [];
    for (let i = 2; i + 1 < flat.length; i += 2) items.push(this.decode('(page)', flat[i] as string, flat[i + 1] as string));
    return { items, last: Number(flat[0]), more: Number(flat[1]) === 1 };
  }

  /** The sequence number of a kept event (to page from it: `after` may name an event id). */
  async seqOf(eventId: string): Promise<number | undefined> {
    const score = await this.redis.zscore(this.keys.order, eventId);
    return score === null ? undefined : Number(score);
  }

  keysOf(): string[] {
    return Object.values(this.keys);
  }

  private decode(field: string, raw: string, delivery: string): LoggedEvent {
    const m = HEAD.exec(raw);
    if (!m) throw new StateCorruptError(this.keys.data, field, 'expected "seq|recordedAt|tenant|type|json"');
    const event = parseJson(notifyEventSchema, raw.slice(m[0].length), this.keys.data, field);
    const at = Number(m[2]);
    return {
      seq: Number(m[1]),
      recordedAt: at,
      tenantId: m[3] ?? '',
      event,
      delivery: delivery === '' ? { state: 'pending', attempts: 0, at } : parseJson(eventDeliverySchema, delivery, this.keys.status, field),
    };
  }
}
