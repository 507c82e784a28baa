/**
 * Sync-run history, the last RUNS_KEPT runs per tenant, bounded in bytes (issue 40). The newest RUNS_DETAILED runs
 * in full: per run a HASH `runs:<t>:run:<runId>`: `meta`
 * (JSON), `phase`, `progress` (JSON), `outcome`, `finishedAt`, `errors` and `unlinked` (JSON lists, capped)
 * and one `c:<name>` integer field per count, so an increment is a plain HINCRBY. A ZSET `runs:<t>:index`
 * (score = startedAt) orders them; starting a run cuts the oldest detailed one to a compact line (a JSON array: id,
 * mode, times, trigger, outcome, the counts not zero, the first error cut to COMPACT_ERROR_MAX_CHARS, how many errors and
 * unlinked payments were left out) on the LIST `runs:<t>:compact`, newest first, trimmed to the rest of RUNS_KEPT
 * and to RUNS_MAX_AGE_DAYS. A STRING `runs:<t>:last-success` holds the
 * finishedAt (ms) of the tenant's last run that read every entity to its end (succeeded or partial), for the
 * metric of how far behind the sync is: kept apart from the history, so a scrape reads one key per tenant.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { RUN_MODES } from '../glossary.js';
import { sendAll, type RedisCommand } from '../redis/batch.js';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
import { hgetallFlat, pairs, parseJson, parseValue, StateCorruptError } from './stored.js';

export const RUNS_KEPT = 50;
export const RUN_ERRORS_KEPT = 100;
export const RUN_ERROR_MAX_CHARS = 1000;
export const RUN_UNLINKED_KEPT = 1000;
/** Runs kept in full by default (RUNS_DETAILED); older ones keep a compact line. */
export const RUNS_DETAILED = 5;
/** The first error of a run, in its compact line. */
export const COMPACT_ERROR_MAX_CHARS = 100;

/** How a tenant's history is bounded: runs kept, of which in full, and the age limit of the rest. */
export interface RunsBound {
  /** Runs kept in full (RUNS_DETAILED; default 5). */
  detailed?: number;
  /** Compact lines of runs that started longer ago than this are dropped (RUNS_MAX_AGE_DAYS; undefined or 0: none). */
  maxAgeMs?: number;
  /** The clock of the age limit (tests). */
  now?: number;
}

/** The four run modes (src/glossary.ts). `backfill` is a `full` run, never a mode of its own. */
export const runModeSchema = z.enum(RUN_MODES);
/** `waiting`: the tenant's platform is not connected yet (no refresh token, no connect link completed): not a failure. */
export const runOutcomeSchema = z.enum(['succeeded', 'partial', 'failed', 'waiting']);
export type RunOutcome = z.infer<typeof runOutcomeSchema>;
const countsSchema = z.record(z.string(), z.number().int());
const progressSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

export const runStartSchema = z.object({
  runId: z.string().min(1),
  mode: runModeSchema,
  startedAt: z.number().int().nonnegative(),
  /** What started it: schedule, cli, api, ... */
  trigger: z.string(),
  requestedAt: z.number().optional(),
});
export type RunStart = z.infer<typeof runStartSchema>;

/** A run's stalls (issue 35): attempts the watchdog ended for want of progress, and the last one's time and reason. */
export const runStallsSchema = z.object({ count: z.number().int().positive(), at: z.number().int(), reason: z.string() });
export type RunStalls = z.infer<typeof runStallsSchema>;

/** What a running run is waiting on, in one line, at most this long. */
export const RUN_WAITING_MAX_CHARS = 500;

export interface RunPatch {
  /** Absolute values (replace those fields); use `increment` for deltas. */
  counts?: Record<string, number>;
  phase?: string;
  progress?: z.infer<typeof progressSchema>;
  /** When the run last made progress (ms; the stall watchdog's view). */
  progressAt?: number;
  /** Where it waits now (one line; '' when it moves). */
  waiting?: string;
  stalls?: RunStalls;
}

export interface RunFinish {
  outcome: z.infer<typeof runOutcomeSchema>;
  finishedAt: number;
  counts: Record<string, number>;
  /** Capped at RUN_ERRORS_KEPT entries of RUN_ERROR_MAX_CHARS. */
  errors: string[];
  /** Platform ids of payments whose invoice is unknown; capped at RUN_UNLINKED_KEPT. */
  unlinkedPayments?: string[];
}

const cappedListSchema = z.object({ items: z.array(z.string()), omitted: z.number().int().nonnegative() });

export const runRecordSchema = runStartSchema.extend({
  phase: z.string().optional(),
  progress: progressSchema.optional(),
  outcome: runOutcomeSchema.optional(),
  finishedAt: z.number().optional(),
  counts: countsSchema,
  errors: z.array(z.string()),
  /** Errors beyond the cap, counted but not kept. */
  errorsOmitted: z.number().int().nonnegative(),
  unlinkedPayments: z.array(z.string()),
  unlinkedOmitted: z.number().int().nonnegative(),
  progressAt: z.number().int().optional(),
  waiting: z.string().optional(),
  stalls: runStallsSchema.optional(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

const compactLineSchema = z.tuple([
  z.string(),
  runModeSchema,
  z.number(),
  z.string(),
  z.number().nullable(),
  runOutcomeSchema.nullable(),
  z.number().nullable(),
  z.union([z.literal(0), z.record(z.string(), z.number().int())]),
  z.string().nullable(),
  z.number().int().nonnegative(),
  z.number().int().nonnegative(),
]);

const START = stateScript('state/lua/runs-start');
const TRIM = stateScript('state/lua/runs-trim');
const PATCH = stateScript('state/lua/runs-patch');
const FINISH = stateScript('state/lua/runs-finish');
const READ = stateScript('state/lua/runs-read');

function capped(list: readonly string[], keep: number, maxChars = Infinity): string {
  const items = list.slice(0, keep).map((s) => (s.length > maxChars ? `${s.slice(0, maxChars)}...` : s));
  return JSON.stringify({ items, omitted: Math.max(0, list.length - keep) });
}

function countFields(counts: Record<string, number>): string[] {
  const out: string[] = [];
  for (const [name, n] of Object.entries(countsSchema.parse(counts))) out.push(`c:${name}`, String(n));
  return out;
}

export class RunStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  indexKey(tenant: string): string {
    return stateKey(this.prefix, 'runs', tenant, 'index');
  }

  runKey(tenant: string, runId: string): string {
    return stateKey(this.prefix, 'runs', tenant, 'run', runId);
  }

  compactKey(tenant: string): string {
    return stateKey(this.prefix, 'runs', tenant, 'compact');
  }

  lastSuccessKey(tenant: string): string {
    return stateKey(this.prefix, 'runs', tenant, 'last-success');
  }

  /**
   * Records a run's start (a run id seen again starts afresh) and bounds the history: `keep` runs (RUNS_KEPT), the
   * newest `bound.detailed` in full, the rest as compact lines no older than `bound.maxAgeMs`. One round trip, and a
   * second once more than `detailed` runs are held (the runs to cut are read first, so the script that cuts them is
   * given every key it touches). A crash between the two leaves one detailed run too many, cut by the next start.
   */
  async start(tenant: string, run: RunStart, keep = RUNS_KEPT, bound: RunsBound = {}): Promise<void> {
    const r = runStartSchema.parse(run);
    const detailed = Math.max(1, Math.min(keep, bound.detailed ?? RUNS_DETAILED));
    const index = this.indexKey(tenant);
    const excess = z.array(z.string()).parse(await START.run(this.redis, [index, this.runKey(tenant, r.runId)], [r.runId, r.startedAt, JSON.stringify(r), detailed]));
    if (excess.length === 0) return;
    const oldest = bound.maxAgeMs ? (bound.now ?? Date.now()) - bound.maxAgeMs : 0;
    await TRIM.run(this.redis, [index, this.compactKey(tenant), ...excess.map((id) => this.runKey(tenant, id))], [detailed, keep - detailed, oldest, COMPACT_ERROR_MAX_CHARS, ...excess]);
  }

  /** Patches a run (one round trip). Returns false when the run is unknown (never started, or trimmed). */
  async update(tenant: string, runId: string, patch: RunPatch): Promise<boolean> {
    const fields: string[] = [];
    if (patch.counts) fields.push(...countFields(patch.counts));
    if (patch.phase !== undefined) fields.push('phase', patch.phase);
    if (patch.progress !== undefined) fields.push('progress', JSON.stringify(progressSchema.parse(patch.progress)));
    if (patch.progressAt !== undefined) fields.push('progressAt', String(Math.round(patch.progressAt)));
    if (patch.waiting !== undefined) fields.push('waiting', patch.waiting.slice(0, RUN_WAITING_MAX_CHARS));
    if (patch.stalls !== undefined) fields.push('stalls', JSON.stringify(runStallsSchema.parse({ ...patch.stalls, reason: patch.stalls.reason.slice(0, RUN_ERROR_MAX_CHARS) })));
    if (fields.length === 0) return true;
    return (await PATCH.run(this.redis, [this.runKey(tenant, runId)], ['set', ...fields])) === 1;
  }

  /** Adds deltas to counts (HINCRBY, one round trip). */
  async increment(tenant: string, runId: string, deltas: Record<string, number>): Promise<boolean> {
    const fields = countFields(deltas);
    if (fields.length === 0) return true;
    return (await PATCH.run(this.redis, [this.runKey(tenant, runId)], ['incr', ...fields])) === 1;
  }

  async finish(tenant: string, runId: string, result: RunFinish): Promise<boolean> {
    const fields = [
      'outcome', runOutcomeSchema.parse(result.outcome),
      'finishedAt', String(result.finishedAt),
      'errors', capped(result.errors, RUN_ERRORS_KEPT, RUN_ERROR_MAX_CHARS),
      'waiting', '',
      ...countFields(result.counts),
    ];
    if (result.unlinkedPayments) fields.push('unlinked', capped(result.unlinkedPayments, RUN_UNLINKED_KEPT));
    const mark = result.outcome === 'failed' || result.outcome === 'waiting' ? '' : String(result.finishedAt);
    return (await FINISH.run(this.redis, [this.runKey(tenant, runId), this.lastSuccessKey(tenant)], [mark, ...fields])) === 1;
  }

  /** When the tenant's last succeeded or partial run finished (ms), or undefined before the first. */
  async lastSuccessAt(tenant: string): Promise<number | undefined> {
    const k = this.lastSuccessKey(tenant);
    const v = await this.redis.get(k);
    if (v === null) return undefined;
    if (!/^\d+$/.test(v)) throw new StateCorruptError(k, undefined, 'not a time in ms');
    return Number(v);
  }

  async get(tenant: string, runId: string): Promise<RunRecord | undefined> {
    const k = this.runKey(tenant, runId);
    const flat = await hgetallFlat(this.redis, k);
    const run = this.decode(k, flat);
    if (run) return run;
    // An older run: its compact line, if still kept (at most RUNS_KEPT short lines).
    const ck = this.compactKey(tenant);
    const lines = await this.redis.lrange(ck, 0, -1);
    return lines.map((line) => this.decodeCompact(ck, line)).find((r) => r.runId === runId);
  }

  /** The last `limit` runs, newest first (two round trips: the index, then every run it names at once). */
  async recent(tenant: string, limit = 20): Promise<RunRecord[]> {
    const n = Math.max(0, limit);
    if (n === 0) return [];
    // The index and the compact lines together (one round trip), then every detailed run it names at once.
    const ck = this.compactKey(tenant);
    const [ids, lines] = await Promise.all([this.redis.zrevrange(this.indexKey(tenant), 0, n - 1), this.redis.lrange(ck, 0, n - 1)]);
    const out: RunRecord[] = [];
    if (ids.length > 0) {
      const keys = ids.map((id) => this.runKey(tenant, id));
      const reply = (await READ.run(this.redis, keys, [])) as unknown[];
      keys.forEach((k, i) => {
        const run = this.decode(k, reply[i]);
        if (run) out.push(run);
      });
    }
    // Fewer detailed runs than asked for: the compact lines of older ones follow (newest first).
    if (ids.length < n) for (const line of lines.slice(0, n - ids.length)) out.push(this.decodeCompact(ck, line));
    return out;
  }

  async last(tenant: string): Promise<RunRecord | undefined> {
    return (await this.recent(tenant, 1))[0];
  }

  /**
   * The outcome of each tenant's last run, as `last` gives it (undefined: no run yet, or the last is under way), for
   * many tenants at once (the API's tenant filters): the newest id and compact line of each side by side, then the
   * outcome field of each detailed one; no record is decoded but a compact line.
   */
  async lastOutcomes(tenants: readonly string[]): Promise<(RunOutcome | undefined)[]> {
    const heads = await sendAll(this.redis, tenants.flatMap((t): RedisCommand[] => [['zrevrange', this.indexKey(t), 0, 0], ['lindex', this.compactKey(t), 0]]));
    const newest = tenants.map((_, i) => (heads[2 * i] as string[] | undefined)?.[0]);
    const detailed = tenants.flatMap((t, i) => {
      const id = newest[i];
      return id === undefined ? [] : [{ i, command: ['hget', this.runKey(t, id), 'outcome'] as RedisCommand }];
    });
    const outcomes = await sendAll(this.redis, detailed.map((d) => d.command));
    const out: (RunOutcome | undefined)[] = tenants.map((t, i) => {
      const line = heads[2 * i + 1];
      return newest[i] === undefined && typeof line === 'string' ? this.decodeCompact(this.compactKey(t), line).outcome : undefined;
    });
    detailed.forEach((d, j) => {
      const parsed = runOutcomeSchema.safeParse(outcomes[j]);
      out[d.i] = parsed.success ? parsed.data : undefined;
    });
    return out;
  }

  /** The index, every run hash it names (read first: run keys are not enumerable otherwise), the last success. */
  async keysOf(tenant: string): Promise<string[]> {
    const ids = await this.redis.zrange(this.indexKey(tenant), 0, -1);
    return [this.indexKey(tenant), ...ids.map((id) => this.runKey(tenant, id)), this.compactKey(tenant), this.lastSuccessKey(tenant)];
  }

  /** A compact line (runs-trim.lua) as a run record: what it keeps, lists empty with what they held counted. */
  private decodeCompact(k: string, line: string): RunRecord {
    const [runId, mode, startedAt, trigger, requestedAt, outcome, finishedAt, counts, error, errorsOmitted, unlinkedOmitted] = parseJson(compactLineSchema, line, k, 'compact line');
    const record: Record<string, unknown> = {
      runId,
      mode,
      startedAt,
      trigger,
      counts: counts === 0 ? {} : counts,
      errors: error === null ? [] : [error],
      errorsOmitted,
      unlinkedPayments: [],
      unlinkedOmitted,
    };
    if (requestedAt !== null) record['requestedAt'] = requestedAt;
    if (outcome !== null) record['outcome'] = outcome;
    if (finishedAt !== null) record['finishedAt'] = finishedAt;
    return parseValue(runRecordSchema, record, k);
  }

  private decode(k: string, flat: unknown): RunRecord | undefined {
    const fields = pairs(parseValue(z.array(z.string()), flat, k));
    if (fields.length === 0) return undefined;
    const h = new Map(fields);
    const meta = h.get('meta');
    if (meta === undefined) throw new StateCorruptError(k, 'meta', 'missing');
    const counts: Record<string, number> = {};
    for (const [f, v] of fields) {
      if (!f.startsWith('c:')) continue;
      if (!/^-?\d+$/.test(v)) throw new StateCorruptError(k, f, 'count is not an integer');
      counts[f.slice(2)] = Number(v);
    }
    const errors = h.has('errors') ? parseJson(cappedListSchema, h.get('errors') ?? '', k, 'errors') : { items: [], omitted: 0 };
    const unlinked = h.has('unlinked') ? parseJson(cappedListSchema, h.get('unlinked') ?? '', k, 'unlinked') : { items: [], omitted: 0 };
    const record: Record<string, unknown> = {
      ...parseJson(runStartSchema, meta, k, 'meta'),
      counts,
      errors: errors.items,
      errorsOmitted: errors.omitted,
      unlinkedPayments: unlinked.items,
      unlinkedOmitted: unlinked.omitted,
    };
    if (h.has('phase')) record['phase'] = h.get('phase');
    if (h.has('progress')) record['progress'] = parseJson(progressSchema, h.get('progress') ?? '', k, 'progress');
    if (h.has('outcome')) record['outcome'] = h.get('outcome');
    if (h.has('finishedAt')) record['finishedAt'] = Number(h.get('finishedAt'));
    if (h.has('progressAt')) record['progressAt'] = Number(h.get('progressAt'));
    const waiting = h.get('waiting');
    if (waiting) record['waiting'] = waiting;
    if (h.has('stalls')) record['stalls'] = parseJson(runStallsSchema, h.get('stalls') ?? '', k, 'stalls');
    return parseValue(runRecordSchema, record, k);
  }
}
