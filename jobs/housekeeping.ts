/**
 * The `housekeeping` job: bounds on what would otherwise grow without end. Per tenant in force: dead letters last
 * tried more than DEAD_LETTER_MAX_AGE_DAYS ago (a record gone from the source is never tried again), unknown call
 * outcomes whose campaign has expired, webhook events past their count and age. One scheduler for the fleet
 * (src/queues/schedulers.ts) makes one job per interval, whatever the number of workers (decision 0130). Every step
 * is idempotent, so a pass run twice (delivery is at least once) drops nothing more. A tenant whose pass fails is
 * logged and left for the next interval; the others go on, and the job completes with the totals. First, the state of
 * tenants removed from the store longer than TENANT_STATE_RETENTION_DAYS ago is purged.
 */
import type { Logger } from '../src/logger.js';
import { defineProcessor, type JobProcessor } from '../src/queues/index.js';

export interface HousekeepingDeps {
  /** The ids of the tenants in force. */
  tenantIds(): readonly string[];
  deadLetters: { prune(tenant: string, before: number): Promise<number> };
  campaigns: { pruneUnknown(tenant: string): Promise<number> };
  webhookEvents: { trim(tenant: string): Promise<number> };
  /** DEAD_LETTER_MAX_AGE_DAYS in ms; 0 keeps dead letters for good. */
  deadLetterMaxAgeMs: number;
  /** Purges the state of tenants removed from the store more than TENANT_STATE_RETENTION_DAYS ago: how many. */
  purgeRemovedTenants?(): Promise<number>;
  /** True while Redis is unreachable (the outage log speaks for a failed pass then). */
  redisDown(): boolean;
  logger: Logger;
}

/** What one pass dropped, over every tenant; `failed`: tenants whose pass failed. */
export interface HousekeepingResult {
  tenants: number;
  deadLetters: number;
  unknownOutcomes: number;
  webhookEvents: number;
  failed: number;
  /** Tenants removed from the store whose state was purged. */
  purgedTenants: number;
}

export function createHousekeepingProcessor(deps: HousekeepingDeps): JobProcessor<HousekeepingResult> {
  return defineProcessor('housekeeping', async () => {
    const total: HousekeepingResult = { tenants: 0, deadLetters: 0, unknownOutcomes: 0, webhookEvents: 0, failed: 0, purgedTenants: 0 };
    try {
      total.purgedTenants = (await deps.purgeRemovedTenants?.()) ?? 0;
    } catch (err) {
      if (!deps.redisDown()) deps.logger.warn({ err: (err as Error).message }, 'housekeeping: purging removed tenants failed; it runs again within the hour');
    }
    for (const tenant of deps.tenantIds()) {
      total.tenants += 1;
      try {
        const dropped = await housekeepTenant(deps, tenant);
        total.deadLetters += dropped.deadLetters;
        total.unknownOutcomes += dropped.unknownOutcomes;
        total.webhookEvents += dropped.webhookEvents;
      } catch (err) {
        total.failed += 1;
        if (!deps.redisDown()) deps.logger.warn({ tenant, err: (err as Error).message }, 'housekeeping failed; it runs again within the hour');
      }
    }
    return total;
  });
}

async function housekeepTenant(deps: HousekeepingDeps, tenant: string): Promise<{ deadLetters: number; unknownOutcomes: number; webhookEvents: number }> {
  const deadLetters = deps.deadLetterMaxAgeMs > 0 ? await deps.deadLetters.prune(tenant, Date.now() - deps.deadLetterMaxAgeMs) : 0;
  const unknownOutcomes = await deps.campaigns.pruneUnknown(tenant);
  const webhookEvents = await deps.webhookEvents.trim(tenant);
  if (deadLetters + unknownOutcomes + webhookEvents > 0) deps.logger.info({ tenant, deadLetters, unknownOutcomes, webhookEvents }, 'housekeeping: dropped expired entries');
  return { deadLetters, unknownOutcomes, webhookEvents };
}
