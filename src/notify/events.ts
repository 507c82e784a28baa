/**
 * Run webhooks' events (docs/run-webhooks.md): what the worker tells a tenant's receiver, in the Standard Webhooks
 * shape (`{ type, timestamp, data }`, the id in the `webhook-id` header). An event's id is made from what it is
 * about, never drawn at random: a run recorded as finished twice (a crash between its record and its job's end)
 * makes one id, so the notify job (whose job id is the event id) is added once and a receiver that dedupes on
 * `webhook-id` sees it once. Events hold no secret and no address: the delivery looks both up when it sends.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { tenantIdSchema } from '../config/tenants.js';
import { RUN_MODES } from '../glossary.js';
import { OAUTH_KINDS } from '../platforms/registry.js';

export const NOTIFY_EVENT_TYPES = ['run.finished', 'connection.changed'] as const;
export type NotifyEventType = (typeof NOTIFY_EVENT_TYPES)[number];

/** Errors a run.finished event carries (the run's first ones; `status` and the run history keep the rest). */
export const EVENT_ERRORS_KEPT = 5;
const EVENT_ERROR_MAX_CHARS = 500;

const eventIdSchema = z.string().regex(/^msg_[0-9a-f]{32}$/, 'msg_ and 32 hex digits');
const iso = z.iso.datetime();

export const runFinishedDataSchema = z.strictObject({
  tenantId: tenantIdSchema,
  runId: z.string().min(1).max(200),
  mode: z.enum(RUN_MODES),
  trigger: z.string().max(40),
  outcome: z.enum(['succeeded', 'partial', 'failed', 'waiting']),
  counts: z.record(z.string(), z.number().int()),
  /** Records set aside in this run (the `deadLettered` count), 0 when none. */
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
  /** An OAuth platform's kind (the registry's). */
  platform: z.enum(OAUTH_KINDS),
  /** connected: a connect link completed; needs_reconnect: the platform refused the grant; revoked: `connect revoke`. */
  state: z.enum(CONNECTION_STATES),
  reason: z.string().max(EVENT_ERROR_MAX_CHARS + 3).optional(),
  /** The Xero organisation or QuickBooks company. */
  connection: z.string().max(200).optional(),
});

export const notifyEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ id: eventIdSchema, type: z.literal('run.finished'), timestamp: iso, data: runFinishedDataSchema }),
  z.strictObject({ id: eventIdSchema, type: z.literal('connection.changed'), timestamp: iso, data: connectionChangedDataSchema }),
]);
export type NotifyEvent = z.infer<typeof notifyEventSchema>;
export type RunFinishedData = z.infer<typeof runFinishedDataSchema>;
export type ConnectionChangedData = z.infer<typeof connectionChangedDataSchema>;

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
      counts: { ...r.counts },
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

/** The body a receiver gets: the Standard Webhooks payload (the id travels in `webhook-id`). */
export function bodyOf(event: NotifyEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
}
