/**
 * The `schedule-tick` job: a tenant's scheduler ticked (src/queues/schedulers.ts keeps one incremental and one
 * reconcile scheduler per tenant). A tick enqueues a deduplicated sync run (never deduplicate in a scheduler's
 * template: bullmq #2954); a tick of a tenant no longer in the tenants file is ignored.
 */
import type { Queue } from 'bullmq';
import type { Logger } from '../src/logger.js';
import { defineProcessor, requestSync, type JobProcessor } from '../src/queues/index.js';

export interface TickProcessorDeps {
  syncQueue: Queue;
  knows(tenantId: string): boolean;
  logger: Logger;
}

export function createTickProcessor(deps: TickProcessorDeps): JobProcessor<{ enqueued: boolean }> {
  return defineProcessor('tick', async (data) => {
    if (!deps.knows(data.tenantId)) {
      deps.logger.warn({ tenant: data.tenantId }, 'schedule tick for a tenant not in the tenants file; ignored');
      return { enqueued: false };
    }
    await requestSync(deps.syncQueue, data.tenantId, data.mode, { trigger: data.mode === 'reconcile' ? 'reconcile' : 'schedule' });
    return { enqueued: true };
  });
}
