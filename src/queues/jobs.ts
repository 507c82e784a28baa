/**
 * Every job, in one table (docs/development.md, "Project layout"): its queue, its name, the zod schema of its data, how a repeat of it is
 * recognised (a deterministic job id, a deduplication id, a scheduler id) and its retry and removal options
 * where they differ from the queue's (DEFAULT_JOB_OPTIONS). Producers (`addJob`), schedulers and processors
 * (`defineProcessor`) all take their types from here. Job data holds ids only, never secrets.
 */
import { createHash } from 'node:crypto';
import type { Job, JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { SINCE_RULE, SYNC_TRIGGERS } from '../glossary.js';
import { refreshRequestSchema } from '../auth/refresh-request.js';
import { callOverridesSchema, campaignIdSchema, overdueCriteriaSchema } from '../calls/types.js';
import { uuid } from '../collections/schemas.js';
import { tenantIdSchema } from '../config/tenants.js';
import { RUN_MODES } from '../glossary.js';
import { NOTIFY_BACKOFF } from '../notify/backoff.js';
import { notifyJobSchema } from '../notify/events.js';
import { idOf, jobId, QUEUES, type IdPart } from './names.js';
import { fastCheckOf, type FastCheck } from '../zod-fast-check.js';

export const syncModeSchema = z.enum(RUN_MODES);
export type SyncMode = z.infer<typeof syncModeSchema>;

/** The earliest and latest instants a job's time may name: a value outside is in another unit (decision 113). */
const EPOCH_MS_MIN = Date.UTC(2000, 0, 1);
const EPOCH_MS_MAX = Date.UTC(2100, 0, 1);

/**
 * An instant as epoch milliseconds (`Date.now()`). Seconds (Python's `time.time()`) are a thousand times too small
 * and microseconds a thousand times too large: both are refused, never recorded as 1970 or the year 55,000.
 */
const epochMs = (what: string) =>
  z
    .number({ error: (iss) => (iss.input === undefined ? 'required: epoch milliseconds' : 'must be a number: epoch milliseconds') })
    .int('must be a whole number of epoch milliseconds (Date.now(); in Python time.time_ns() // 1_000_000)')
    .min(EPOCH_MS_MIN, `must be epoch milliseconds, from 2000-01-01 (${EPOCH_MS_MIN}); a value in seconds is a thousand times too small`)
    .max(EPOCH_MS_MAX, `must be epoch milliseconds, at most 2100-01-01 (${EPOCH_MS_MAX}); microseconds or nanoseconds are too large`)
    .describe(what);

export { SYNC_TRIGGERS, SINCE_RULE } from '../glossary.js';

const syncJobSchema = z.strictObject({
  tenantId: tenantIdSchema.describe('a tenant id of the tenants file'),
  mode: syncModeSchema.describe('incremental: what changed since the cursor; full: everything (a backfill, from `since` if given); reconcile: every invoice, cursors untouched; replay: the dead letters only'),
  since: z.iso.date().optional().describe('with mode full: only records updated on or after this date (YYYY-MM-DD)'),
  trigger: z
    .enum(SYNC_TRIGGERS, {
      error: (iss) => (iss.input === undefined ? `required: who asked for the run ("external" for jobs your own code adds)` : `must be one of ${SYNC_TRIGGERS.join(', ')} ("external" for jobs your own code adds)`),
    })
    .describe('who asked for the run, kept in the run history: "external" for jobs added by code outside collections-sync'),
  requestedAt: epochMs('when the run was asked for, in epoch milliseconds (Date.now()); runs started for a request are found by it'),
}).refine(SINCE_RULE.holds, { message: SINCE_RULE.message, path: [...SINCE_RULE.path] });

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
  requestedAt: epochMs('when it was asked for (epoch milliseconds)'),
});

const singleCallJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  campaignId: campaignIdSchema,
  contactUuid: uuid,
  overrides: callOverridesSchema.default({}),
  requestedAt: epochMs('when it was asked for (epoch milliseconds)'),
});

const webhookEventJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  /** The kept event's id (src/webhooks/events.ts): the job reads the event from there, so job data holds no payload. */
  eventId: z.string().min(1).max(256),
  receivedAt: epochMs('when the event was received (epoch milliseconds)'),
});

/** A housekeeping pass: nothing to name, it works every tenant in force (the scheduler's template is the whole job). */
const housekeepingJobSchema = z.strictObject({});

/** The id of the one housekeeping scheduler of the fleet. */
export const HOUSEKEEPING_SCHEDULER_ID = 'housekeeping';

const REFRESH_ID: readonly IdPart<{ clientKey: string }>[] = ['refresh', { field: 'clientKey' }];

/** The id of a client's refresh scheduler, and of its on-demand rotation while one waits. */
export function refreshId(clientKey: string): string {
  return idOf(REFRESH_ID, { clientKey });
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
   * The parts of a deduplication id (`idOf`) with `keepLastIfActive`: while one waits, repeats join it; while one
   * runs, the latest repeat is kept as the single next job (so a request made during a run is not lost).
   */
  dedupe?: readonly IdPart<z.output<S>>[];
  /**
   * Code outside collections-sync may add this job (decision 110): `jobs contract` prints its queue, BullMQ prefix,
   * name, the JSON Schema of its data, its deduplication rule and options, with this example.
   */
  outside?: { about: string; example: z.input<S> };
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
    dedupe: ['sync', { field: 'tenantId' }, { field: 'mode' }, { field: 'since', absent: 'all' }],
    outside: {
      about: 'one sync run of one tenant (a backfill is mode "full", optionally with "since")',
      example: { tenantId: 'acme', mode: 'full', since: '2026-01-01', trigger: 'external', requestedAt: Date.UTC(2026, 10, 27, 9) },
    },
  }),
  /** A tenant's schedule ticked: enqueue a (deduplicated) sync run. Never deduplicated itself (bullmq #2954). */
  tick: kind({
    queue: 'schedule',
    name: 'schedule-tick',
    schema: scheduleTickSchema,
    schedulerId: (d) => jobId('tick', d.tenantId, d.mode),
    // A tick done is worth nothing kept (its run is in the run history): two a tenant per interval filled the queue's 500.
    scheduledOptions: { removeOnComplete: true },
  }),
  /**
   * Housekeeping: drop what would otherwise grow without end (expired dead letters, unknown outcomes of expired
   * campaigns, webhook events past their bounds). One scheduler for the fleet, so one pass per interval however many
   * workers run (decision 0130). A pass that fails is not retried: the next interval runs it again.
   */
  housekeeping: kind({
    queue: 'schedule',
    name: 'housekeeping',
    schema: housekeepingJobSchema,
    schedulerId: () => HOUSEKEEPING_SCHEDULER_ID,
    scheduledOptions: { attempts: 1 },
  }),
  /** A token rotation of one client: the only path to the token endpoint. */
  refresh: kind({
    queue: 'refreshToken',
    name: 'refresh-token',
    schema: refreshRequestSchema,
    dedupe: REFRESH_ID,
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
  /**
   * One run-webhook event to deliver (docs/run-webhooks.md). The data is the event (no address, no secret: the
   * delivery reads both from the config in force); the job id is the event's id, so a repeated emit adds nothing.
   * Attempts are NOTIFY_ATTEMPTS (the producer's), waits the notify back-off (the worker's `backoffStrategy`).
   */
  notify: kind({
    queue: 'notify',
    name: 'notify-deliver',
    schema: notifyJobSchema,
    jobId: (e) => jobId(e.id),
    options: { attempts: 12, backoff: { type: NOTIFY_BACKOFF }, removeOnComplete: { count: 1_000, age: 7 * 86_400 }, removeOnFail: { count: 1_000, age: 30 * 86_400 } },
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
export type NotifyJobData = JobData<'notify'>;

/** A row of the table, typed by its key (the one cast from the table's union to one job's types). */
export function jobKind<K extends JobKey>(key: K): JobKind<z.ZodType<JobData<K>, JobInput<K>>> {
  return JOBS[key] as unknown as JobKind<z.ZodType<JobData<K>, JobInput<K>>>;
}

/** BullMQ's deduplication option of a job with `dedupe` parts (the one spelling of it: producers and the contract). */
export function dedupeOf<D>(parts: readonly IdPart<D>[], data: D): { id: string; keepLastIfActive: true } {
  return { id: idOf(parts, data), keepLastIfActive: true };
}

/** The job's data, or an error naming the job and the bad fields (never the values). */
export function parseJobData<K extends JobKey>(key: K, data: unknown): JobData<K> {
  // The quick check first (a start of 40,000 tenants checks 120,000 schedulers' data): zod only for what it cannot pass.
  if (quickCheckOf(key)?.(data)) return data as JobData<K>;
  const parsed = jobKind(key).schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`invalid ${jobKind(key).name} job data: ${fields}`);
}

const quickChecks = new Map<JobKey, FastCheck | undefined>();
function quickCheckOf(key: JobKey): FastCheck | undefined {
  if (!quickChecks.has(key)) quickChecks.set(key, fastCheckOf(jobKind(key).schema));
  return quickChecks.get(key);
}

/**
 * The typed producer: parses `input` (a bad one never reaches Redis), then adds the job under its name, id and
 * options, `delayMs` from now if given, `attempts` over the table's if given (a setting). `queue` must be the job's queue.
 */
export async function addJob<K extends JobKey>(queue: Queue, key: K, input: JobInput<K>, delayMs?: number, attempts?: number): Promise<{ job: Job; data: JobData<K> }> {
  const spec = jobKind(key);
  if (queue.name !== QUEUES[spec.queue]) throw new Error(`a ${spec.name} job belongs on the ${QUEUES[spec.queue]} queue, not ${queue.name}`);
  const data = parseJobData(key, input);
  const options: JobsOptions = { ...spec.options, ...(attempts !== undefined ? { attempts } : {}) };
  if (spec.jobId) options.jobId = spec.jobId(data);
  if (spec.dedupe) options.deduplication = dedupeOf(spec.dedupe, data);
  if (delayMs !== undefined && delayMs > 0) options.delay = delayMs;
  const job = await queue.add(spec.name, data, options);
  return { job, data };
}
