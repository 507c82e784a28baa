/**
 * The `notify-deliver` job: one delivery attempt of a run-webhook event per job attempt (docs/run-webhooks.md).
 * The address and secret are read from the config in force at each attempt (never from job data), so a secret
 * mended in the tenants file signs the retries. After every attempt the tenant's last delivery is recorded
 * (`delivered`, `retrying`, or `failed` after the last attempt) and counted; a failed attempt throws, and BullMQ
 * waits the notify back-off (src/notify/backoff.ts) as a delayed job before the next. The event's id is the
 * `webhook-id` of every attempt. Nothing here is on a sync's path: the notify queue has slots of its own. One
 * attempt at a time per tenant (the tenant's delivery lock; another event of the tenant waits, delayed, using no
 * attempt): a receiver that never answers holds one notify slot, and other tenants' events go on (decision 0154).
 */
import type { Logger } from '../src/logger.js';
import { deliverEvent, type AddressGuard, type AttemptResult, type NotifyTarget } from '../src/notify/index.js';
import { defineProcessor, hopeless, reschedule, type JobProcessor } from '../src/queues/index.js';
import type { EventLog } from '../src/state/event-log.js';
import type { DeliveryStore, LastDelivery } from '../src/state/index.js';

export interface NotifyProcessorDeps {
  /** The tenant's receiver as configured now (its own `notify`, guarded, else the fleet's), or undefined. */
  targetOf(tenantId: string): NotifyTarget | undefined;
  /** Where a tenant's own URL may connect (OUTBOUND_ALLOWED_NETWORKS beside the public internet). */
  guard: AddressGuard;
  deliveries: DeliveryStore;
  /** The event log: each attempt's outcome is written as the event's delivery state (`GET /v1/events`). */
  events?: Pick<EventLog, 'setDelivery'>;
  timeoutMs: number;
  userAgent: string;
  /** Aborted when the worker shuts down: an attempt under way ends, and the event waits for the next worker. */
  shutdown: AbortSignal;
  /** TTL of the tenant's delivery lock (kept alive while the attempt runs; a dead worker's lapses after it). */
  lockTtlMs: number;
  logger: Logger;
  metrics?: { delivery(tenant: string, type: string, outcome: 'delivered' | 'retried' | 'failed', seconds: number): void };
}

export interface NotifyResult {
  eventId: string;
  statusCode: number | undefined;
  attempts: number;
}

export function createNotifyProcessor(deps: NotifyProcessorDeps): JobProcessor<NotifyResult> {
  return defineProcessor('notify', async (event, attempt) => {
    const tenant = event.data.tenantId;
    const last = attempt.number >= (attempt.job.opts.attempts ?? 1);
    const target = deps.targetOf(tenant);
    const result: AttemptResult = target
      ? await deliverEvent(event, target, { timeoutMs: deps.timeoutMs, userAgent: deps.userAgent, signal: deps.shutdown, guard: deps.guard })
      : { ok: false, error: 'no receiver configured any more (notify.url or RUN_WEBHOOK_URL)', ms: 0 };
    // Cut short by a shutdown: not the receiver's failure; the attempt is made again later, none used.
    if (!result.ok && deps.shutdown.aborted) throw reschedule(1_000, 'shutdown');
    const state: LastDelivery['state'] = result.ok ? 'delivered' : last || !target ? 'failed' : 'retrying';
    const outcome = {
      state,
      attempts: attempt.number,
      ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
    await deps.deliveries.record(tenant, { eventId: event.id, type: event.type, ...outcome, at: Date.now() });
    await deps.events?.setDelivery(event.id, outcome);
    deps.metrics?.delivery(tenant, event.type, state === 'retrying' ? 'retried' : state, result.ms / 1000);
    const log = { tenant, eventId: event.id, type: event.type, attempt: attempt.number, statusCode: result.statusCode, err: result.error };
    if (result.ok) {
      deps.logger.debug(log, 'run webhook delivered');
      return { eventId: event.id, statusCode: result.statusCode, attempts: attempt.number };
    }
    if (state === 'failed') {
      deps.logger.warn(log, 'run webhook not delivered: giving up');
      throw hopeless(`run webhook ${event.id} not delivered after ${attempt.number} attempts: ${result.error ?? ''}`);
    }
    deps.logger.info(log, 'run webhook attempt failed; retrying with back-off');
    throw new Error(`run webhook ${event.id}: ${result.error ?? 'failed'}`);
  }, { lock: (event, job, token) => deps.deliveries.lock(event.data.tenantId, `${job.id ?? 'x'}.${token ?? 'x'}`, deps.lockTtlMs) });
}
