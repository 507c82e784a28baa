/**
 * What the ops server reads before each `/metrics` scrape: queue depths, and per tenant its dead letters, pending
 * invoices, unknown call outcomes, last successful run and cursor lag. Per-tenant gauges start afresh at each
 * scrape, so a tenant gone from the tenants file leaves them. Tenants are read `AT_ONCE` at a time (one after
 * another, 10,000 tenants' reads took seconds of round trips). With one series for all tenants (decision 0273),
 * the gauges hold sums, read at most every SUMS_EVERY_MS, the last success is the oldest of the tenants' (how far
 * behind the most behind one is), and the cursor lag, a per-tenant figure, is not read.
 */
import type { App } from '../app.js';
import { CampaignStore } from '../calls/index.js';
import { ENTITIES } from '../glossary.js';
import { ALL_TENANTS, type Metrics } from '../ops/metrics.js';

const AT_ONCE = 100;
/** With one series for all, the tenants' sums are read again at most this often (10,000 tenants' reads take ~1 s of CPU). */
const SUMS_EVERY_MS = 60_000;

interface TenantReading {
  dead: Record<(typeof ENTITIES)[number], number>;
  pending: number;
  unknown: number;
  lastSuccessAt: number | undefined;
}

export function beforeScrapeOf(app: App): () => Promise<void> {
  const campaigns = new CampaignStore(app.redis, app.env.KEY_PREFIX, { retentionMs: app.env.CAMPAIGN_RETENTION_DAYS * 86_400_000 });
  let sumsAt = -Infinity;
  return async () => {
    const metrics = app.metrics;
    if (!metrics) return;
    for (const [name, queue] of Object.entries(app.queues)) {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: name, state }, n);
    }
    const perTenant = metrics.perTenant();
    if (!perTenant && Date.now() - sumsAt < SUMS_EVERY_MS) return;
    sumsAt = perTenant ? -Infinity : Date.now();
    for (const gauge of [metrics.deadLetters, metrics.pendingInvoices, metrics.callUnknownOutcomes, metrics.lastSuccessTimestamp]) gauge.reset();
    const all: TenantReading = { dead: Object.fromEntries(ENTITIES.map((e) => [e, 0])) as TenantReading['dead'], pending: 0, unknown: 0, lastSuccessAt: undefined };
    const tenants = app.tenants();
    for (let i = 0; i < tenants.length; i += AT_ONCE) {
      await Promise.all(
        tenants.slice(i, i + AT_ONCE).map(async (t) => {
          const r = await readTenant(app, campaigns, t.id);
          if (perTenant) return setTenant(app, metrics, t.id, r);
          for (const entity of ENTITIES) all.dead[entity] += r.dead[entity];
          all.pending += r.pending;
          all.unknown += r.unknown;
          if (r.lastSuccessAt !== undefined) all.lastSuccessAt = Math.min(all.lastSuccessAt ?? Infinity, r.lastSuccessAt);
        }),
      );
    }
    if (!perTenant) {
      const tenant = ALL_TENANTS;
      if (all.lastSuccessAt !== undefined) metrics.lastSuccessTimestamp.set({ tenant }, all.lastSuccessAt / 1000);
      for (const entity of ENTITIES) metrics.deadLetters.set({ tenant, entity }, all.dead[entity]);
      metrics.pendingInvoices.set({ tenant }, all.pending);
      metrics.callUnknownOutcomes.set({ tenant }, all.unknown);
    }
  };
}

async function readTenant(app: App, campaigns: CampaignStore, tenant: string): Promise<TenantReading> {
  const [dead, pending, unknown, lastSuccessAt] = await Promise.all([
    app.stores.deadLetters.counts(tenant),
    app.stores.pending.count(tenant),
    campaigns.countUnknown(tenant),
    app.stores.runs.lastSuccessAt(tenant),
  ]);
  return { dead: dead.byEntity, pending, unknown, lastSuccessAt };
}

async function setTenant(app: App, metrics: Metrics, tenant: string, r: TenantReading): Promise<void> {
  if (r.lastSuccessAt !== undefined) metrics.lastSuccessTimestamp.set({ tenant }, r.lastSuccessAt / 1000);
  for (const entity of ENTITIES) metrics.deadLetters.set({ tenant, entity }, r.dead[entity]);
  metrics.pendingInvoices.set({ tenant }, r.pending);
  metrics.callUnknownOutcomes.set({ tenant }, r.unknown);
  for (const entity of ENTITIES) {
    const c = await app.stores.cursors.get(tenant, entity);
    if (c?.highWater) metrics.cursorLagSeconds.set({ tenant, entity }, (Date.now() - Date.parse(c.highWater.updatedAt)) / 1000);
  }
}
