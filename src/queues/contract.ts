/**
 * The outside job contract (docs/outside-producers.md: generated, never written twice): for the jobs of the job
 * table marked `outside`, what code outside collections-sync needs to add one with a plain BullMQ client (Node or
 * Python): the queue, its BullMQ prefix (from KEY_PREFIX), the job name, the JSON Schema of the data (zod 4's
 * `z.toJSONSchema` of the table's schema, as a producer writes it), the deduplication rule and the options the
 * CLI's own jobs get. Built from configuration alone: no Redis (decision 110).
 */
import type { JobsOptions, KeepJobs } from 'bullmq';
import { z } from 'zod';
import { queuePrefix } from '../redis/keys.js';
import { dedupeOf, jobKind, JOBS, parseJobData, type JobKey } from './jobs.js';
import { idRule, JOB_ID_ESCAPING, QUEUES, type QueueName } from './names.js';
import { DEFAULT_JOB_OPTIONS, workerOptions } from './options.js';

export interface OutsideJob {
  /** The job table's key (`sync`). */
  key: string;
  /** BullMQ's job name: `Queue.add(name, data, options)`. */
  name: string;
  about: string;
  /** JSON Schema (draft 2020-12) of the data a producer gives. */
  dataSchema: Record<string, unknown>;
  /** A valid payload (its `requestedAt` is a fixed instant: use the time you add the job). */
  example: unknown;
  deduplication?: {
    /** The id's rule: `sync.<tenantId>.<mode>.<since, or "all" when absent>`. */
    id: string;
    escaping: string;
    keepLastIfActive: true;
    /** The rule applied to `example`. */
    exampleId: string;
  };
  /** The options to add it with: what the CLI's own jobs of this kind get (the deduplication of `example`). */
  options: JobsOptions;
  /** What a job added without options gets: no retries, and the worker's removal bounds (decision 111). */
  withoutOptions: { attempts: 1; removeOnComplete: KeepJobs | undefined; removeOnFail: KeepJobs | undefined };
  /** Failed for good at once (never retried), the reason in the job's `failedReason`. */
  refused: string[];
}

export interface OutsideQueue {
  /** BullMQ's queue name: `new Queue(queue, { prefix })`. */
  queue: QueueName;
  /** BullMQ's `prefix` option (not ioredis keyPrefix): KEY_PREFIX's base and the queue as a hash tag. */
  prefix: string;
  jobs: OutsideJob[];
}

export interface JobContract {
  keyPrefix: string;
  queues: OutsideQueue[];
}

const REFUSED = [
  'a job name other than the one above',
  'data that does not match the schema (a missing or unknown field, a trigger not listed, `since` with a mode other than full, a requestedAt that is not whole epoch milliseconds from 2000 to 2100)',
];

function outsideJob<K extends JobKey>(key: K): OutsideJob | undefined {
  const spec = jobKind(key);
  if (spec.outside === undefined) return undefined;
  const example = parseJobData(key, spec.outside.example);
  const dedupe = spec.dedupe;
  const keep = workerOptions(spec.queue);
  const { attempts, backoff, removeOnComplete, removeOnFail } = { ...DEFAULT_JOB_OPTIONS, ...spec.options };
  return {
    key,
    name: spec.name,
    about: spec.outside.about,
    dataSchema: z.toJSONSchema(spec.schema, { io: 'input', target: 'draft-2020-12' }),
    example: spec.outside.example,
    ...(dedupe ? { deduplication: { id: idRule(dedupe), escaping: JOB_ID_ESCAPING, keepLastIfActive: true as const, exampleId: dedupeOf(dedupe, example).id } } : {}),
    options: {
      ...(attempts === undefined ? {} : { attempts }),
      ...(backoff === undefined ? {} : { backoff }),
      ...(removeOnComplete === undefined ? {} : { removeOnComplete }),
      ...(removeOnFail === undefined ? {} : { removeOnFail }),
      ...(dedupe ? { deduplication: dedupeOf(dedupe, example) } : {}),
    },
    withoutOptions: { attempts: 1, removeOnComplete: keep.removeOnComplete, removeOnFail: keep.removeOnFail },
    refused: REFUSED,
  };
}

/** The contract for a deployment's KEY_PREFIX: every queue that holds a job outside code may add. */
export function jobContract(keyPrefix: string): JobContract {
  const queues = new Map<QueueName, OutsideQueue>();
  for (const key of Object.keys(JOBS) as JobKey[]) {
    const job = outsideJob(key);
    if (!job) continue;
    const queue = QUEUES[jobKind(key).queue];
    const entry = queues.get(queue) ?? { queue, prefix: queuePrefix(keyPrefix, queue), jobs: [] };
    entry.jobs.push(job);
    queues.set(queue, entry);
  }
  return { keyPrefix, queues: [...queues.values()] };
}
