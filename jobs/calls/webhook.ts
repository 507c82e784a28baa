/**
 * A call webhook event kept by the receiver (src/webhooks): read it back, settle the call its `requestMetadata`
 * names (src/calls/settle.ts), and record the outcome on the event. Never sends anything. A campaign that is
 * running holds its lock: the job waits (delayed, no attempt used) and settles once it has stopped.
 */
import { settleCall, type SettleDeps } from '../../src/calls/settle.js';
import type { Logger } from '../../src/logger.js';
import { reschedule, type WebhookEventJobData } from '../../src/queues/index.js';
import { findRequestMetadata, type WebhookEvents, type WebhookOutcome } from '../../src/webhooks/events.js';

export interface WebhookEventDeps {
  events: WebhookEvents;
  settle: SettleDeps;
  logger: Logger;
  /** The hook the worker turns into `collections_sync_webhook_events_total`. */
  count?: (tenant: string, outcome: WebhookOutcome) => void;
}

export interface WebhookEventResult {
  eventId: string;
  outcome: WebhookOutcome | 'gone' | 'handled';
}

/** How long a webhook event waits for a running campaign before it tries to settle again. */
const BUSY_DELAY_MS = 5_000;

export async function handleWebhookEvent(deps: WebhookEventDeps, data: WebhookEventJobData): Promise<WebhookEventResult> {
  const { tenantId: tenant, eventId } = data;
  const event = await deps.events.get(tenant, eventId);
  // Past the bounds already (count or age): nothing is left to settle from.
  if (!event) return { eventId, outcome: 'gone' };
  if (event.outcome !== undefined) return { eventId, outcome: 'handled' };
  const log = deps.logger.child({ tenant, eventId });
  const reason = `the service reported the call (webhook event ${eventId})`;
  const s = await settleCall(deps.settle, tenant, findRequestMetadata(event.body), reason);
  if (s.outcome === 'busy') throw reschedule(BUSY_DELAY_MS, `campaign ${s.campaignId} is running`);
  if (s.outcome === 'settled') {
    await deps.events.setOutcome(tenant, eventId, { outcome: 'settled', detail: `was ${s.from}`, settled: [{ campaignId: s.campaignId, number: s.number }] });
    log.info({ campaignId: s.campaignId, from: s.from }, 'webhook settled a call: counted as called, the number stays in cooldown');
  } else if (s.outcome === 'unchanged') {
    await deps.events.setOutcome(tenant, eventId, { outcome: 'unchanged', detail: s.detail });
    log.debug({ campaignId: s.campaignId, detail: s.detail }, 'webhook event about a call already settled');
  } else {
    await deps.events.setOutcome(tenant, eventId, { outcome: 'unmatched', detail: s.detail });
    // Once per event: the job runs once per event id, and a redelivery is not worked again.
    log.info({ detail: s.detail }, 'webhook event names no call of ours; kept (calls events)');
  }
  deps.count?.(tenant, s.outcome);
  return { eventId, outcome: s.outcome };
}
