/**
 * Run webhooks' events (docs/run-webhooks.md): what the worker tells a tenant's receiver, in the Standard Webhooks
 * shape (`{ type, timestamp, data }`, the id in the `webhook-id` header). An event's id is made from what it is
 * about, never drawn at random: a run recorded as finished twice (a crash between its record and its job's end)
 * makes one id, so the notify job (whose job id is the event id) is added once and a receiver that dedupes on
 * `webhook-id` sees it once. Events hold no secret and no address: the delivery looks both up when it sends.
 *
 * The schemas here are the events' one definition: the queue parses job data with them, the event log stores what
 * they made, and the OpenAPI document's `webhooks` and `GET /v1/events` are generated from them (decision 0225).
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { tenantIdSchema } from '../config/tenants.js';
import { ENTITIES, RUN_MODES, type Entity } from '../glossary.js';
import { PLATFORM_KINDS } from '../platforms/registry.js';

import type { NotifyEventType } from './event-types.js';

export * from './event-types.js';

/** Errors a run.finished event carries (the run's first ones; `status` and the run history keep the rest). */
export const EVENT_ERRORS_KEPT = 5;
const EVENT_ERROR_MAX_CHARS = 500;

export const eventIdSchema = z.string().regex(/^msg_[0-9a-f]{32}$/, 'msg_ and 32 hex digits');
const iso = z.iso.datetime();

const countMap = z.record(z.string(), z.number().int());
/**
 * A run's counts as the API's runs show them, one shape for both (decision 0223): `total` the counts of no entity
 * (`created`: all entities), `byEntity` each entity's (`contacts.badRecords` is `byEntity.contacts.badRecords`).
 */
export const runCountsSchema = z.strictObject({ total: countMap, byEntity: z.strictObject({ contacts: countMap, invoices: countMap, payments: countMap }) });
export type RunCounts = z.infer<typeof runCountsSchema>;

/** A run's flat counts (`contacts.created`, `created`) nested: `<entity>.<outcome>` under byEntity, the rest under total. */
export function nestedCounts(counts: Record<string, number>): RunCounts {
  const byEntity: Record<Entity, Record<string, number>> = { contacts: {}, invoices: {}, payments: {} };
  const total: Record<string, number> = {};
  for (const [k, n] of Object.entries(counts)) {
    const dot = k.indexOf('.');
    const entity = ENTITIES.find((e) => dot > 0 && k.slice(0, dot) === e);
    if (entity !== undefined) byEntity[entity][k.slice(dot + 1)] = n;
    else total[k] = n;
  }
  return { total, byEntity };
}

export const runFinishedDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  runId: z.string().min(1).max(200),
  mode: z.enum(RUN_MODES),
  trigger: z.string().max(40),
  outcome: z.enum(['succeeded', 'partial', 'failed', 'waiting']),
  /** The run's counts by outcome, in all and per entity (as `GET /v1/tenants/{t}/runs/{runId}` has them). */
  counts: runCountsSchema,
  /** The dead letters this run made (as `GET …/runs/{runId}` lists them; decision 0224), 0 when none. */
  deadLettered: z.number().int().nonnegative(),
  errors: z.array(z.string().max(EVENT_ERROR_MAX_CHARS + 3)).max(EVENT_ERRORS_KEPT),
  /** Attempts of this run the stall watchdog ended (no progress within RUN_STALL_S); their reason is among `errors`. */
  stalls: z.number().int().nonnegative().optional(),
  startedAt: iso,
  finishedAt: iso,
});

export const CONNECTION_STATES = ['connected', 'needs_reconnect', 'revoked'] as const;

export const connectionChangedDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  /** The platform's kind (the registry's): an OAuth platform's grant, or a key-based one's credentials (Odoo). */
  platform: z.enum(PLATFORM_KINDS),
  /** connected: a connect link completed; needs_reconnect: the platform refused the grant; revoked: `connect revoke`. */
  state: z.enum(CONNECTION_STATES),
  reason: z.string().max(EVENT_ERROR_MAX_CHARS + 3).optional(),
  /** The Xero organisation or QuickBooks company. */
  connection: z.string().max(200).optional(),
});

export const TENANT_SOURCES = ['file', 'api'] as const;
const tenantSource = z.enum(TENANT_SOURCES);

export const tenantCreatedDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  /** api: created over the control API. */
  source: tenantSource,
  platform: z.enum(PLATFORM_KINDS),
});

export const tenantUpdatedDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  source: tenantSource,
  /** The top-level fields of the entry that changed (`platform`, `notify`, ...): names only, never values. */
  changed: z.array(z.string().max(64)).max(64),
});

export const tenantDeletedDataSchema = z.strictObject({ tenantId: tenantIdSchema, source: tenantSource });

export const webhookTestDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  /** Says what the event is: a test asked for over the API (`POST /v1/webhooks/test`). */
  message: z.string().max(200),
});

/** Each event type's `data` schema: the one table the queue's schema, the log's and the OpenAPI document's are made from. */
export const EVENT_DATA_SCHEMAS = {
  'run.finished': runFinishedDataSchema,
  'connection.changed': connectionChangedDataSchema,
  'tenant.created': tenantCreatedDataSchema,
  'tenant.updated': tenantUpdatedDataSchema,
  'tenant.deleted': tenantDeletedDataSchema,
  'webhook.test': webhookTestDataSchema,
} as const satisfies Record<NotifyEventType, z.ZodType>;

/** An event of one type, as the worker holds it (`id` travels as the `webhook-id` header). */
const eventOf = <T extends NotifyEventType>(type: T) => z.strictObject({ id: eventIdSchema, type: z.literal(type), timestamp: iso, data: EVENT_DATA_SCHEMAS[type] });

export const notifyEventSchema = z.discriminatedUnion('type', [
  eventOf('run.finished'),
  eventOf('connection.changed'),
  eventOf('tenant.created'),
  eventOf('tenant.updated'),
  eventOf('tenant.deleted'),
  eventOf('webhook.test'),
]);
export type NotifyEvent = z.infer<typeof notifyEventSchema>;

/**
 * The notify job's data: an event, where a `run.finished` queued before its counts were nested (a retry waiting
 * across an upgrade) has them nested on the way in.
 */
export const notifyJobSchema = z.preprocess((v) => {
  const e = v as { type?: unknown; data?: { counts?: unknown } } | null;
  const counts = e?.type === 'run.finished' ? e.data?.counts : undefined;
  if (counts === null || typeof counts !== 'object' || 'byEntity' in counts) return v;
  return { ...e, data: { ...e?.data, counts: nestedCounts(counts as Record<string, number>) } };
}, notifyEventSchema);
export type RunFinishedData = z.infer<typeof runFinishedDataSchema>;
export type ConnectionChangedData = z.infer<typeof connectionChangedDataSchema>;

/** The body a receiver gets for one type: `{ type, timestamp, data }` (the Standard Webhooks payload); `data`: its schema, named for a document. */
export function webhookPayloadSchema(type: NotifyEventType, data: z.ZodType = EVENT_DATA_SCHEMAS[type]) {
  return z.strictObject({ type: z.literal(type), timestamp: iso, data });
}

/** Where events go: the notify queue's producer (src/queues), or nothing when the tenant has no receiver. */
export interface EventSink {
  /** Enqueues the event's delivery; never throws (a failure is logged: an event must not fail a run). */
  emit(event: NotifyEvent): Promise<void>;
}

/** An event's id from what it is about: `msg_` and 32 hex digits of sha256 over the parts. */
export function eventIdOf(...parts: (string | number)[]): string {
  return `msg_${createHash('sha256').update(parts.join('|')).digest('hex').slice(0, 32)}`;
}

const cut = (s: string): string => (s.length > EVENT_ERROR_MAX_CHARS ? `${s.slice(0, EVENT_ERROR_MAX_CHARS)}...` : s);

/** The `run.finished` event of a run: one id per (tenant, run), however often the run is recorded as finished. */
export function runFinishedEvent(r: {
  tenantId: string;
  runId: string;
  mode: RunFinishedData['mode'];
  trigger: string;
  outcome: RunFinishedData['outcome'];
  counts: Record<string, number>;
  /** The dead letters the run made (still kept when it ended); default: the `deadLettered` count. */
  deadLettered?: number;
  errors: readonly string[];
  startedAt: number;
  finishedAt: number;
  stalls?: number;
}): NotifyEvent {
  const finishedAt = new Date(r.finishedAt).toISOString();
  return {
    id: eventIdOf('run.finished', r.tenantId, r.runId),
    type: 'run.finished',
    timestamp: finishedAt,
    data: {
      tenantId: r.tenantId,
      runId: r.runId,
      mode: r.mode,
      trigger: r.trigger.slice(0, 40),
      outcome: r.outcome,
      counts: nestedCounts(r.counts),
      deadLettered: r.deadLettered ?? r.counts['deadLettered'] ?? 0,
      errors: r.errors.slice(0, EVENT_ERRORS_KEPT).map(cut),
      stalls: r.stalls ?? 0,
      startedAt: new Date(r.startedAt).toISOString(),
      finishedAt,
    },
  };
}

/**
 * A `connection.changed` event. `at` (epoch ms) is when the change was made, and part of its id: one change is one
 * event (its retries share the id), two changes are two.
 */
export function connectionChangedEvent(c: Omit<ConnectionChangedData, 'reason' | 'connection'> & { reason?: string | undefined; connection?: string | undefined; at: number }): NotifyEvent {
  return {
    id: eventIdOf('connection.changed', c.tenantId, c.state, c.at),
    type: 'connection.changed',
    timestamp: new Date(c.at).toISOString(),
    data: {
      tenantId: c.tenantId,
      platform: c.platform,
      state: c.state,
      ...(c.reason !== undefined ? { reason: cut(c.reason) } : {}),
      ...(c.connection !== undefined ? { connection: c.connection } : {}),
    },
  };
}

/**
 * A `tenant.*` event of a change made over the API. `at` (epoch ms) is when, and part of its id with `version` (the
 * tenant's entity tag after the change, when there is one): one change is one event.
 */
export function tenantEvent(
  c: { tenantId: string; source: (typeof TENANT_SOURCES)[number]; at: number; version?: string } & (
    | { type: 'tenant.created'; platform: z.infer<typeof tenantCreatedDataSchema>['platform'] }
    | { type: 'tenant.updated'; changed: readonly string[] }
    | { type: 'tenant.deleted' }
  ),
): NotifyEvent {
  const id = eventIdOf(c.type, c.tenantId, c.at, c.version ?? '');
  const timestamp = new Date(c.at).toISOString();
  const head = { tenantId: c.tenantId, source: c.source };
  if (c.type === 'tenant.created') return { id, type: c.type, timestamp, data: { ...head, platform: c.platform } };
  if (c.type === 'tenant.updated') return { id, type: c.type, timestamp, data: { ...head, changed: [...c.changed].slice(0, 64) } };
  return { id, type: c.type, timestamp, data: head };
}

/** A `webhook.test` event: an id of its own each time (a test is never a retry of another). */
export function webhookTestEvent(tenantId: string, at = Date.now()): NotifyEvent {
  return {
    id: `msg_${randomBytes(16).toString('hex')}`,
    type: 'webhook.test',
    timestamp: new Date(at).toISOString(),
    data: { tenantId, message: 'a test event asked for over the control API (POST /v1/webhooks/test); nothing happened' },
  };
}

/** The body a receiver gets: the Standard Webhooks payload (the id travels in `webhook-id`). */
export function bodyOf(event: NotifyEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
}
