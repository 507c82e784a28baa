/**
 * What the ops server reads before each `/metrics` scrape: queue depths, and per tenant its dead letters, pending
 * invoices, unknown call outcomes, last successful run and cursor lag. Per-tenant gauges start afresh at each
 * scrape, so a tenant gone from the tenants file leaves them.
 */
import type { App } from '../app.js';
import { CampaignStore } from '../calls/index.js';
import { ENTITIES } from '../glossary.js';
import type { Metrics } from '../ops/metrics.js';

export function beforeScrapeOf(app: App): () => Promise<void> {
  const campaigns = new CampaignStore(app.redis, app.env.KEY_PREFIX, { retentionMs: app.env.CAMPAIGN_RETENTION_DAYS * 86_400_000 });
  return async () => {
    const metrics = app.metrics;
    if (!metrics) return;
    for (const [name, queue] of Object.entries(app.queues)) {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: name, state }, n);
    }
    for (const gauge of [metrics.deadLetters, metrics.pendingInvoices, metrics.callUnknownOutcomes, metrics.lastSuccessTimestamp]) gauge.reset();
    for (const t of app.tenants()) await scrapeTenant(app, metrics, campaigns, t.id);
  };
}

async function scrapeTenant(app: App, metrics: Metrics, campaigns: CampaignStore, tenant: string): Promise<void> {
  const [dead, pending, unknown, lastSuccessAt] = await Promise.all([
    app.stores.deadLetters.counts(tenant),
    app.stores.pending.count(tenant),
    campaigns.countUnknown(tenant),
    app.stores.runs.lastSuccessAt(tenant),
  ]);
  if (lastSuccessAt !== undefined) metrics.lastSuccessTimestamp.set({ tenant }, lastSuccessAt / 1000);
  for (const entity of ENTITIES) metrics.deadLetters.set({ tenant, entity }, dead.byEntity[entity]);
  metrics.pendingInvoices.set({ tenant }, pending);
  metrics.callUnknownOutcomes.set({ tenant }, unknown);
  for (const entity of ENTITIES) {
    const c = await app.stores.cursors.get(tenant, entity);
    if (c?.highWater) metrics.cursorLagSeconds.set({ tenant, entity }, (Date.now() - Date.parse(c.highWater.updatedAt)) / 1000);
  }
}
