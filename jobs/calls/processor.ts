/**
 * The `calls` queue: `calls-campaign` (an overdue selection or an explicit list, through bulk calls) and
 * `calls-single` (one stored contact). A campaign is planned once (its plan is stored whole), then its
 * requests run in order under a campaign lock (jobs/calls/requests.ts):
 *
 *   reserve the numbers in the call ledger -> write the request as `sending` -> send -> sent | unknown | failed
 *
 * A request found in `sending` on a re-run (BullMQ delivers at least once) may have gone out: it becomes
 * `unknown` and is never sent again. An ambiguous failure (timeout or reset after sending) is `unknown` too,
 * for an operator to confirm or release. A definite failure (422, ...) releases the numbers. A failure that
 * certainly did not reach the service (connect error, 503, 429, 401) puts the request back to `planned` and
 * the job is retried by BullMQ; on its last attempt the rest of the campaign fails and the numbers are freed.
 * The cancel flag is read before every request.
 */
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { createCallStores, FINAL_STATUSES, PlanError, resolveSettings, type CallSettings, type CallStores, type CampaignMeta, type CampaignStore } from '../../src/calls/index.js';
import type { CollectionsClient } from '../../src/collections/client.js';
import type { TenantConfig } from '../../src/config/tenants.js';
import type { Logger } from '../../src/logger.js';
import { byJobName, campaignMetaOf, defineProcessor, hopeless, reschedule, type CampaignJobData, type JobAttempt, type JobProcessor, type SingleCallJobData } from '../../src/queues/index.js';
import { RedisLock } from '../../src/redis/lock.js';
import type { RecordMirror } from '../../src/state/record-mirror.js';
import { makePlan, type PlanSource } from './planner.js';
import { CampaignRun, NotSent, type CallMetrics } from './requests.js';
import { handleWebhookEvent, type WebhookEventDeps, type WebhookEventResult } from './webhook.js';
import type { WebhookEvents, WebhookOutcome } from '../../src/webhooks/events.js';

export interface CallsProcessorDeps {
  logger: Logger;
  redis: Redis;
  prefix: string;
  mirror: Pick<RecordMirror, 'scan' | 'getMany'>;
  tenant(id: string): TenantConfig | undefined;
  clientFor(tenant: TenantConfig): CollectionsClient;
  /** CALL_COOLDOWN_HOURS in ms. */
  cooldownMs: number;
  /** CAMPAIGN_RETENTION_DAYS in ms (default 90 days). */
  retentionMs?: number;
  /** How long a campaign stays owned by a worker that stopped answering. */
  lockTtlMs: number;
  /** Aborted on shutdown: the campaign stops between requests and is picked up again. */
  shutdown: AbortSignal;
  metrics?: CallMetrics;
  /** Where call webhook events are kept (src/webhooks), and the hook counting what became of them. */
  webhookEvents: WebhookEvents;
  countWebhookEvent?: (tenant: string, outcome: WebhookOutcome) => void;
}

export interface CampaignSummary {
  campaignId: string;
  status: CampaignMeta['status'];
  called: number;
  unknown: number;
  failed: number;
  cooldown: number;
  skipped: number;
}

type CallsJobData = CampaignJobData | SingleCallJobData;

/** The processor of the calls queue: campaigns and single calls, each under its campaign's lock. */
export function createCallsProcessor(deps: CallsProcessorDeps): JobProcessor<CampaignSummary | WebhookEventResult> {
  const stores = createCallStores(deps.redis, deps.prefix, { cooldownMs: deps.cooldownMs, ...(deps.retentionMs === undefined ? {} : { retentionMs: deps.retentionMs }) });
  const lock = (data: CallsJobData, job: Job, token: string | undefined): RedisLock =>
    new RedisLock(deps.redis, stores.store.lockKey(data.campaignId), deps.lockTtlMs, ownerOf(job, token));
  const options = { lock, logger: deps.logger };
  const webhook: WebhookEventDeps = {
    events: deps.webhookEvents,
    settle: { ...stores, lock: (id) => new RedisLock(deps.redis, stores.store.lockKey(id), deps.lockTtlMs) },
    logger: deps.logger,
    ...(deps.countWebhookEvent ? { count: deps.countWebhookEvent } : {}),
  };
  return byJobName<CampaignSummary | WebhookEventResult>(
    defineProcessor('campaign', (data, attempt) => runCampaign(deps, stores, data, attempt), options),
    defineProcessor('single', (data, attempt) => runCampaign(deps, stores, data, attempt), options),
    defineProcessor('webhookEvent', (data) => handleWebhookEvent(webhook, data), { logger: deps.logger }),
  );
}

/** What one campaign job works with. */
interface Campaign {
  id: string;
  data: CallsJobData;
  tenant: TenantConfig;
  client: CollectionsClient;
  stores: CallStores;
  log: Logger;
}

/** A campaign's steps: its record and tenant, its plan (made once), then its requests. */
async function runCampaign(deps: CallsProcessorDeps, stores: CallStores, data: CallsJobData, attempt: JobAttempt<CampaignSummary>): Promise<CampaignSummary> {
  const { store } = stores;
  const id = data.campaignId;
  if (!(await store.get(id))) await store.create(campaignMetaOf(data));
  const tenant = deps.tenant(data.tenantId);
  if (!tenant) {
    await store.update(id, { status: 'failed', error: `unknown tenant "${data.tenantId}"`, finishedAt: Date.now() });
    throw hopeless(`unknown tenant "${data.tenantId}": not in the tenants file`);
  }
  const meta = await store.get(id);
  if (!meta) throw new Error(`campaign ${id} vanished`);
  if (FINAL_STATUSES.includes(meta.status)) return summarise(store, id);
  const log = deps.logger.child({ tenant: data.tenantId, campaignId: id, jobId: attempt.job.id });
  const campaign: Campaign = { id, data, tenant, client: deps.clientFor(tenant), stores, log };
  const planned = await planOnce(deps, campaign, meta);
  return 'summary' in planned ? planned.summary : sendRequests(deps, campaign, planned.settings, attempt);
}

/**
 * The campaign's plan, made and stored whole on its first run (a dry run ends there); a later run finds it.
 * Settings or a plan that cannot be made fail the campaign (completed, with status `failed`).
 */
async function planOnce(deps: CallsProcessorDeps, { id, data, tenant, client, stores, log }: Campaign, meta: CampaignMeta): Promise<{ settings: CallSettings } | { summary: CampaignSummary }> {
  const { store, callLedger } = stores;
  if (meta.plan && meta.settings) {
    if (meta.status === 'queued') await store.update(id, { status: 'running', startedAt: Date.now() });
    return { settings: meta.settings };
  }
  const settings = resolveSettings(tenant.calls, data.overrides);
  if (!settings.ok) return { summary: await fail(store, id, `bad call settings: ${settings.problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`) };
  let plan;
  try {
    plan = await makePlan({ mirror: deps.mirror, callLedger, client }, { id, tenant: tenant.id, dryRun: meta.dryRun }, settings.settings, await sourceOf(store, data));
  } catch (err) {
    if (err instanceof PlanError) return { summary: await fail(store, id, err.message) };
    throw err;
  }
  const now = Date.now();
  const status = meta.dryRun ? ('previewed' as const) : ('running' as const);
  await store.storePlan({ ...meta, settings: settings.settings, plan: plan.counts, status, startedAt: now, ...(meta.dryRun ? { finishedAt: now } : {}) }, plan);
  log.info({ ...plan.counts, dryRun: meta.dryRun }, meta.dryRun ? 'campaign previewed' : 'campaign planned');
  return meta.dryRun ? { summary: await summarise(store, id) } : { settings: settings.settings };
}

/** The planned requests, in order; a shutdown stops between two and reschedules the job. */
async function sendRequests(deps: CallsProcessorDeps, { id, tenant, client, stores, log }: Campaign, settings: CallSettings, attempt: JobAttempt<CampaignSummary>): Promise<CampaignSummary> {
  const { store, callLedger } = stores;
  const owner = ownerOf(attempt.job, attempt.token);
  const run = new CampaignRun({ store, callLedger, client, tenant: tenant.id, id, settings, owner, log, ...(deps.metrics ? { metrics: deps.metrics } : {}) });
  // A request that did not reach the service is retried by the job; once the job gives up, so does the rest.
  attempt.onLastAttempt(async (err) => {
    if (!(err instanceof NotSent)) return undefined;
    const reason = `gave up after ${attempt.number} attempt(s): ${err.message}`;
    await run.failRest(reason);
    return fail(store, id, reason);
  });
  const outcome = await run.all({
    shouldStop: () => {
      if (attempt.lockLost.aborted) throw new Error(`lost the lock of campaign ${id}; the worker that holds it continues`);
      return deps.shutdown.aborted;
    },
  });
  if (outcome === 'stopped') {
    log.info('shutting down: the campaign stops between requests and is picked up again');
    throw reschedule(1_000, 'shutting down');
  }
  await store.update(id, { status: outcome, finishedAt: Date.now() });
  const summary = await summarise(store, id);
  log.info(summary, `campaign ${outcome}`);
  return summary;
}

/** Who holds a campaign's lock: this job, in this worker's hands (its token). */
function ownerOf(job: Job, token: string | undefined): string {
  return `${job.id ?? 'job'}.${token ?? 'x'}`;
}

async function sourceOf(store: CampaignStore, data: CallsJobData): Promise<PlanSource> {
  if (!('source' in data)) return { kind: 'single', contactUuid: data.contactUuid };
  if (data.source.kind === 'overdue') return { kind: 'overdue', criteria: data.source.criteria };
  const targets = await store.input(data.campaignId);
  if (!targets) throw hopeless(`campaign ${data.campaignId}: its list is missing (expired or never stored)`);
  return { kind: 'list', targets };
}

async function fail(store: CampaignStore, id: string, error: string): Promise<CampaignSummary> {
  await store.update(id, { status: 'failed', error, finishedAt: Date.now() });
  return summarise(store, id);
}

async function summarise(store: CampaignStore, id: string): Promise<CampaignSummary> {
  const r = await store.report(id);
  if (!r) throw new Error(`campaign ${id} vanished`);
  return {
    campaignId: id,
    status: r.campaign.status,
    called: r.counts.called + r.counts.confirmed,
    unknown: r.counts.unknown,
    failed: r.counts.failed,
    cooldown: r.counts.cooldown,
    skipped: r.counts.skipped,
  };
}
