/**
 * Every job, in one table (STYLE.md 3): its queue, its name, the zod schema of its data, how a repeat of it is
 * recognised (a deterministic job id, a deduplication id, a scheduler id) and its retry and removal options
 * where they differ from the queue's (DEFAULT_JOB_OPTIONS). Producers (`addJob`), schedulers and processors
 * (`defineProcessor`) all take their types from here. Job data holds ids only, never secrets.
 */
import { createHash } from 'node:crypto';
import type { Job, JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { refreshRequestSchema } from '../auth/refresh-request.js';
import { callOverridesSchema, campaignIdSchema, overdueCriteriaSchema } from '../calls/types.js';
import { uuid } from '../collections/schemas.js';
import { tenantIdSchema } from '../config/tenants.js';
import { RUN_MODES } from '../glossary.js';
import { jobId, QUEUES } from './names.js';

export const syncModeSchema = z.enum(RUN_MODES);
export type SyncMode = z.infer<typeof syncModeSchema>;

const syncJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  mode: syncModeSchema,
  /** Backfill from this date (YYYY-MM-DD) instead of the beginning; full mode only. */
  since: z.iso.date().optional(),
  trigger: z.enum(['schedule', 'cli', 'reconcile', 'api', 'webhook', 'test']).default('cli'),
  requestedAt: z.number().int().positive(),
});

const scheduleTickSchema = z.strictObject({
  tenantId: tenantIdSchema,
  mode: z.enum(['incremental', 'reconcile']),
});

const campaignJobSchema = z.strictObject({
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

const singleCallJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  campaignId: campaignIdSchema,
  contactUuid: uuid,
  overrides: callOverridesSchema.default({}),
  requestedAt: z.number().int().positive(),
});

const webhookEventJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  /** The kept event's id (src/webhooks/events.ts): the job reads the event from there, so job data holds no payload. */
  eventId: z.string().min(1).max(256),
  receivedAt: z.number().int().positive(),
});

/** The id of a client's refresh scheduler, and of its on-demand rotation while one waits. */
export function refreshId(clientKey: string): string {
  return jobId('refresh', clientKey);
}

/** The id of the planned check of one token version of a client. */
export function refreshPlanId(clientKey: string, version: number): string {
  return jobId('refresh-at', clientKey, version);
}

/** The job id of a campaign (or a single call, a campaign of one): one job per campaign. */
export function campaignJobId(campaignId: string): string {
  return jobId('calls', campaignId);
}

export interface JobKind<S extends z.ZodType> {
  queue: keyof typeof QUEUES;
  name: string;
  schema: S;
  /** A custom job id: a repeat is dropped while the first is kept (bullmq #1337). */
  jobId?(data: z.output<S>): string;
  /**
   * A deduplication id with `keepLastIfActive`: while one waits, repeats join it; while one runs, the latest
   * repeat is kept as the single next job (so a request made during a run is not lost).
   */
  dedupeId?(data: z.output<S>): string;
  /** The id of the job scheduler that produces it (one per owner: ensureSchedulers keeps them in step). */
  schedulerId?(data: z.output<S>): string;
  /** Retry and removal of an added job, over the queue's DEFAULT_JOB_OPTIONS. */
  options?: JobsOptions;
  /** Retry and removal of a job made by its scheduler, over the queue's DEFAULT_JOB_OPTIONS. */
  scheduledOptions?: JobsOptions;
}

const kind = <S extends z.ZodType>(k: JobKind<S>): JobKind<S> => k;

export const JOBS = {
  /** One run of one tenant. One queued job per (tenant, mode, since); a request during a run waits behind it. */
  sync: kind({
    queue: 'sync',
    name: 'sync-run',
    schema: syncJobSchema,
    dedupeId: (d) => jobId('sync', d.tenantId, d.mode, d.since ?? 'all'),
  }),
  /** A tenant's schedule ticked: enqueue a (deduplicated) sync run. Never deduplicated itself (bullmq #2954). */
  tick: kind({
    queue: 'schedule',
    name: 'schedule-tick',
    schema: scheduleTickSchema,
    schedulerId: (d) => jobId('tick', d.tenantId, d.mode),
  }),
  /** A token rotation of one client: the only path to the token endpoint. */
  refresh: kind({
    queue: 'refreshToken',
    name: 'refresh-token',
    schema: refreshRequestSchema,
    dedupeId: (d) => refreshId(d.clientKey),
    schedulerId: (d) => refreshId(d.clientKey),
    options: { attempts: 8, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: true, removeOnFail: { count: 100 } },
    // A scheduled rotation that fails is not retried: the next tick comes soon, and a 401 asks on demand.
    scheduledOptions: { attempts: 1, removeOnComplete: true, removeOnFail: { count: 20 } },
  }),
  /**
   * The planned check of one token version (a 'scheduled' refresh-token job, delayed to the token's margin): one
   * per version (its job id), apart from the on-demand rotations' deduplication so it never holds one back. Not
   * retried: the backstop scheduler and on-demand rotations remain.
   */
  refreshPlanned: kind({
    queue: 'refreshToken',
    name: 'refresh-token',
    schema: refreshRequestSchema,
    jobId: (d) => refreshPlanId(d.clientKey, d.seenVersion ?? 0),
    options: { attempts: 1, removeOnComplete: true, removeOnFail: { count: 20 } },
  }),
  /** A call campaign (an overdue selection or a stored list); the job id is the campaign's. */
  campaign: kind({ queue: 'calls', name: 'calls-campaign', schema: campaignJobSchema, jobId: (d) => campaignJobId(d.campaignId) }),
  /** One call to one stored contact, as a campaign of one. */
  single: kind({ queue: 'calls', name: 'calls-single', schema: singleCallJobSchema, jobId: (d) => campaignJobId(d.campaignId) }),
  /**
   * A call webhook event, kept by the receiver: settle the call it names. One job per (tenant, event id), so a
   * redelivered event is dropped here too; a digest of the id keeps the job id short.
   */
  webhookEvent: kind({
    queue: 'calls',
    name: 'calls-webhook-event',
    schema: webhookEventJobSchema,
    jobId: (d) => jobId('webhook', d.tenantId, createHash('sha256').update(d.eventId).digest('hex').slice(0, 32)),
    options: { attempts: 8, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: { count: 1_000, age: 86_400 }, removeOnFail: { count: 1_000 } },
  }),
};

export type JobKey = keyof typeof JOBS;
/** The data of a job, as its processor sees it (defaults applied). */
export type JobData<K extends JobKey> = z.output<(typeof JOBS)[K]['schema']>;
/** The data a producer gives (defaults may be left out). */
export type JobInput<K extends JobKey> = z.input<(typeof JOBS)[K]['schema']>;

export type SyncJobData = JobData<'sync'>;
export type CampaignJobData = JobData<'campaign'>;
export type SingleCallJobData = JobData<'single'>;
export type WebhookEventJobData = JobData<'webhookEvent'>;

/** A row of the table, typed by its key (the one cast from the table's union to one job's types). */
export function jobKind<K extends JobKey>(key: K): JobKind<z.ZodType<JobData<K>, JobInput<K>>> {
  return JOBS[key] as unknown as JobKind<z.ZodType<JobData<K>, JobInput<K>>>;
}

/** The job's data, or an error naming the job and the bad fields (never the values). */
export function parseJobData<K extends JobKey>(key: K, data: unknown): JobData<K> {
  const parsed = jobKind(key).schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`invalid ${jobKind(key).name} job data: ${fields}`);
}

/**
 * The typed producer: parses `input` (a bad one never reaches Redis), then adds the job under its name, id and
 * options, `delayMs` from now if given. `queue` must be the job's queue.
 */
export async function addJob<K extends JobKey>(queue: Queue, key: K, input: JobInput<K>, delayMs?: number): Promise<{ job: Job; data: JobData<K> }> {
  const spec = jobKind(key);
  if (queue.name !== QUEUES[spec.queue]) throw new Error(`a ${spec.name} job belongs on the ${QUEUES[spec.queue]} queue, not ${queue.name}`);
  const data = parseJobData(key, input);
  const options: JobsOptions = { ...spec.options };
  if (spec.jobId) options.jobId = spec.jobId(data);
  if (spec.dedupeId) options.deduplication = { id: spec.dedupeId(data), keepLastIfActive: true };
  if (delayMs !== undefined && delayMs > 0) options.delay = delayMs;
  const job = await queue.add(spec.name, data, options);
  return { job, data };
}
