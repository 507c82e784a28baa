/**
 * The `calls` queue: `calls-campaign` (an overdue selection or an explicit list, through bulk calls) and
 * `calls-single` (one stored contact). A campaign is planned once (its plan is stored whole), then its
 * requests run in order under a campaign lock:
 *
 *   reserve the numbers in the ledger -> write the request as `sending` -> send -> sent | unknown | failed
 *
 * A request found in `sending` on a re-run (BullMQ delivers at least once) may have gone out: it becomes
 * `unknown` and is never sent again. An ambiguous failure (timeout or reset after sending) is `unknown` too,
 * for an operator to confirm or release. A definite failure (422, ...) releases the numbers. A failure that
 * certainly did not reach the service (connect error, 503, 429, 401) puts the request back to `planned` and
 * the job is retried by BullMQ; on its last attempt the rest of the campaign fails and the numbers are freed.
 * The cancel flag is read before every request.
 */
import { randomBytes } from 'node:crypto';
import { DelayedError, UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import {
  CampaignRun,
  campaignIdSchema,
  callOverridesSchema,
  createCallStores,
  FINAL_STATUSES,
  makePlan,
  NotSent,
  overdueCriteriaSchema,
  PlanError,
  resolveSettings,
  type CampaignMeta,
  type CampaignStore,
  type PlanSource,
  type Target,
  type Verdict,
} from '../src/calls/index.js';
import type { CollectionsClient } from '../src/collections/client.js';
import { AbortedError, AmbiguousError, AuthError, CollectionsError, RateLimitedError, TransientError, ValidationError } from '../src/collections/errors.js';
import { uuid } from '../src/collections/schemas.js';
import { tenantIdSchema, type TenantConfig } from '../src/config/tenants.js';
import type { Logger } from '../src/logger.js';
import { jobId } from '../src/queues/names.js';
import { RedisLock } from '../src/redis/lock.js';
import type { RecordCache } from '../src/state/record-cache.js';
import { parseJobData } from './registry.js';

// ---------- job data ----------
export const campaignJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  campaignId: campaignIdSchema,
  source: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('overdue'), criteria: overdueCriteriaSchema }),
    /** The list's targets are stored with the campaign (job data holds ids, not lists). */
    z.strictObject({ kind: z.literal('list') }),
  ]),
  overrides: callOverridesSchema.default({}),
  dryRun: z.boolean().default(false),
  requestedAt: z.number().int().positive(),
});
export type CampaignJobData = z.infer<typeof campaignJobSchema>;

export const singleCallJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  campaignId: campaignIdSchema,
  contactUuid: uuid,
  overrides: callOverridesSchema.default({}),
  requestedAt: z.number().int().positive(),
});
export type SingleCallJobData = z.infer<typeof singleCallJobSchema>;

export const CALL_JOBS = {
  campaign: { name: 'calls-campaign', schema: campaignJobSchema },
  single: { name: 'calls-single', schema: singleCallJobSchema },
} as const;

/** `cmp-20261120-081500-3fa2`: sortable, readable, no colon (a BullMQ job id part). */
export function newCampaignId(kind: 'cmp' | 'one' | 'dry', now = new Date()): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  return `${kind}-${stamp}-${randomBytes(3).toString('hex')}`;
}

function metaOf(data: CampaignJobData | SingleCallJobData, kind: 'campaign' | 'single'): CampaignMeta {
  const base = { id: data.campaignId, tenant: data.tenantId, createdAt: data.requestedAt, status: 'queued' as const };
  if (kind === 'single') return { ...base, source: 'single', dryRun: false };
  const d = data as CampaignJobData;
  return { ...base, source: d.source.kind, dryRun: d.dryRun, ...(d.source.kind === 'overdue' ? { criteria: d.source.criteria } : {}) };
}

/** Stores the campaign (with an explicit list's targets) and enqueues its job; the job id is the campaign id. */
export async function enqueueCampaign(queue: Queue, store: CampaignStore, input: z.input<typeof campaignJobSchema>, targets?: Target[]): Promise<CampaignJobData> {
  const data = campaignJobSchema.parse(input);
  if (data.source.kind === 'list' && !targets) throw new Error('a list campaign needs its targets');
  if (!(await store.create(metaOf(data, 'campaign'), targets))) throw new Error(`campaign ${data.campaignId} exists already`);
  await queue.add(CALL_JOBS.campaign.name, data, { jobId: jobId('calls', data.campaignId) });
  return data;
}

export async function enqueueSingleCall(queue: Queue, store: CampaignStore, input: z.input<typeof singleCallJobSchema>): Promise<SingleCallJobData> {
  const data = singleCallJobSchema.parse(input);
  if (!(await store.create(metaOf(data, 'single')))) throw new Error(`campaign ${data.campaignId} exists already`);
  await queue.add(CALL_JOBS.single.name, data, { jobId: jobId('calls', data.campaignId) });
  return data;
}

// ---------- the processor ----------
export interface CallsProcessorDeps {
  logger: Logger;
  redis: Redis;
  prefix: string;
  cache: Pick<RecordCache, 'scan' | 'getMany'>;
  tenant(id: string): TenantConfig | undefined;
  clientFor(tenant: TenantConfig): CollectionsClient;
  /** CALL_COOLDOWN_HOURS in ms. */
  cooldownMs: number;
  /** How long a campaign stays owned by a worker that stopped answering. */
  lockTtlMs: number;
  /** Aborted on shutdown: the campaign stops between requests and is picked up again. */
  shutdown: AbortSignal;
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

/** What a failed call request means for the numbers in it. */
export function verdictOf(err: unknown): Verdict {
  if (!(err instanceof CollectionsError)) return { kind: 'unknown', code: 'UNKNOWN', message: err instanceof Error ? err.message : String(err) };
  const base = { code: err.code, message: err.message };
  if (err instanceof AmbiguousError || err instanceof AbortedError) return { kind: 'unknown', ...base };
  if (err instanceof TransientError || err instanceof RateLimitedError) return { kind: 'retry', ...base };
  if (err instanceof AuthError) return { kind: err.retryable ? 'retry' : 'failed', ...base };
  if (err instanceof ValidationError && err.detail.length > 0) {
    return { kind: 'failed', ...base, message: `${err.message} [${err.detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}]` };
  }
  return { kind: 'failed', ...base };
}

export function createCallsProcessor(deps: CallsProcessorDeps) {
  const { store, ledger } = createCallStores(deps.redis, deps.prefix, { cooldownMs: deps.cooldownMs });
  return async (job: Job, token?: string): Promise<CampaignSummary> => {
    const single = job.name === CALL_JOBS.single.name;
    let data: CampaignJobData | SingleCallJobData;
    try {
      data = single ? parseJobData(CALL_JOBS.single.schema, job.data, job.name) : parseJobData(CALL_JOBS.campaign.schema, job.data, CALL_JOBS.campaign.name);
    } catch (err) {
      throw new UnrecoverableError((err as Error).message);
    }
    const id = data.campaignId;
    const log = deps.logger.child({ tenant: data.tenantId, campaignId: id, jobId: job.id });
    if (!(await store.get(id))) await store.create(metaOf(data, single ? 'single' : 'campaign'));
    const tenant = deps.tenant(data.tenantId);
    if (!tenant) {
      await store.update(id, { status: 'failed', error: `unknown tenant "${data.tenantId}"`, finishedAt: Date.now() });
      throw new UnrecoverableError(`unknown tenant "${data.tenantId}": not in the tenants file`);
    }

    const lock = new RedisLock(deps.redis, store.lockKey(id), deps.lockTtlMs, `${job.id ?? 'job'}.${token ?? 'x'}`);
    if (!(await lock.acquire())) {
      // Another copy of this campaign runs (a stalled copy of this job): wait, never run beside it.
      await job.moveToDelayed(Date.now() + 2_000, token);
      throw new DelayedError();
    }
    let lost = false;
    const timer = setInterval(() => {
      lock.extend().then(
        (held) => (lost ||= !held),
        () => undefined,
      );
    }, Math.max(250, Math.floor(deps.lockTtlMs / 3)));
    timer.unref();
    try {
      let meta = await store.get(id);
      if (!meta) throw new Error(`campaign ${id} vanished`);
      if (FINAL_STATUSES.includes(meta.status)) return summarise(store, id);
      const client = deps.clientFor(tenant);
      if (!meta.plan || !meta.settings) {
        const settings = resolveSettings(tenant.calls, data.overrides);
        if (!settings.ok) return await fail(store, id, `bad call settings: ${settings.problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
        const source: PlanSource = single
          ? { kind: 'single', contactUuid: (data as SingleCallJobData).contactUuid }
          : await sourceOf(store, data as CampaignJobData);
        let plan;
        try {
          plan = await makePlan(
            {
              cache: deps.cache,
              ledger,
              remindersDisabled: async () => {
                const off = new Set<string>();
                for await (const c of client.listAllContacts({ remindersEnabled: false })) off.add(c.uuid.toLowerCase());
                return off;
              },
              contact: async (uuid) => {
                const c = (await client.listContacts({ uuid, size: 1 })).items.find((x) => x.uuid.toLowerCase() === uuid.toLowerCase());
                return c && { uuid: c.uuid, name: c.name ?? c.uuid, phoneNumber: c.phoneNumber, remindersEnabled: c.remindersEnabled };
              },
            },
            { id, tenant: tenant.id, dryRun: meta.dryRun },
            settings.settings,
            source,
          );
        } catch (err) {
          if (err instanceof PlanError) return await fail(store, id, err.message);
          throw err;
        }
        const now = Date.now();
        const status = meta.dryRun ? ('previewed' as const) : ('running' as const);
        meta = { ...meta, settings: settings.settings, plan: plan.counts, status, startedAt: now, ...(meta.dryRun ? { finishedAt: now } : {}) };
        await store.storePlan(meta, plan);
        log.info({ ...plan.counts, dryRun: meta.dryRun }, meta.dryRun ? 'campaign previewed' : 'campaign planned');
        if (meta.dryRun) return summarise(store, id);
      } else if (meta.status === 'queued') {
        meta = await store.update(id, { status: 'running', startedAt: Date.now() });
      }
      const settings = meta.settings;
      if (!settings) throw new Error(`campaign ${id} has a plan but no settings`);

      const run = new CampaignRun({ store, ledger, client, classify: verdictOf, tenant: tenant.id, id, settings, owner: lock.owner, log });
      let outcome: 'done' | 'cancelled' | 'stopped';
      try {
        outcome = await run.all({
          shouldStop: () => {
            if (lost) throw new Error(`lost the lock of campaign ${id}; the worker that holds it continues`);
            return deps.shutdown.aborted;
          },
        });
      } catch (err) {
        if (!(err instanceof NotSent)) throw err;
        const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (!last) throw err.original instanceof Error ? err.original : err;
        await run.failRest(`gave up after ${job.attemptsMade + 1} attempt(s): ${err.message}`);
        return await fail(store, id, `gave up after ${job.attemptsMade + 1} attempt(s): ${err.message}`);
      }
      if (outcome === 'stopped') {
        log.info('shutting down: the campaign stops between requests and is picked up again');
        await job.moveToDelayed(Date.now() + 1_000, token);
        throw new DelayedError();
      }
      await store.update(id, { status: outcome, finishedAt: Date.now() });
      const summary = await summarise(store, id);
      log.info(summary, `campaign ${outcome}`);
      return summary;
    } finally {
      clearInterval(timer);
      await lock.release().catch(() => undefined);
    }
  };
}

async function sourceOf(store: CampaignStore, data: CampaignJobData): Promise<PlanSource> {
  if (data.source.kind === 'overdue') return { kind: 'overdue', criteria: data.source.criteria };
  const targets = await store.input(data.campaignId);
  if (!targets) throw new UnrecoverableError(`campaign ${data.campaignId}: its list is missing (expired or never stored)`);
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
