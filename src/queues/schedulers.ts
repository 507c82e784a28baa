/**
 * Job schedulers (BullMQ 6; legacy repeatable jobs are gone), kept in step with the tenants file: one
 * upsert-and-prune for every scheduled job: the sync ticks of each tenant, the token refreshes of each client and the
 * fleet's one housekeeping scheduler.
 * Every process of the fleet calls it at start and on a tenants-file change: a job's schedulers are put in place in
 * shards, each under a lock of its own (concurrent upserts of one scheduler have made duplicates and stopped
 * schedulers: bullmq #2876, #3381). No deduplication in a scheduler's template (bullmq #2954): a tick enqueues a
 * deduplicated job instead.
 */
import { createHash, hash, randomInt, randomUUID } from 'node:crypto';
import type { JobSchedulerJson, Queue, RepeatOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { canonicalJson } from '../canonical-json.js';
import type { ScheduledClient } from '../auth/refresh-request.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { keepAlive, RedisLock } from '../redis/lock.js';
import { jobKind, parseJobData, type JobInput } from './jobs.js';

/** How often a tenant without a `schedule.every` or `cron` is synced. */
export const DEFAULT_EVERY_MS = 15 * 60_000;

/** How often the fleet runs a housekeeping pass (one pass per interval, whatever the number of workers). */
export const HOUSEKEEPING_EVERY_MS = 3_600_000;

type ScheduledJob = 'tick' | 'refresh' | 'housekeeping';

export interface WantedScheduler<K extends ScheduledJob> {
  /** The data of every job it makes; its id comes from the job table (`schedulerId`). */
  data: JobInput<K>;
  repeat: Omit<RepeatOptions, 'key'>;
}

/**
 * Upserts and removals sent at once, per batch: one process putting 30,000 schedulers in place (10,000 tenants) sent
 * them one round trip after another, most of a start; distinct schedulers may be written side by side (a shard's lock
 * keeps other processes out of the same ones), a batch bounds what waits in Redis's input at once.
 */
const WRITES_AT_ONCE = 256;

async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += WRITES_AT_ONCE) await Promise.all(items.slice(i, i + WRITES_AT_ONCE).map(fn));
}

/** Whether a scheduler in place already makes what is wanted (and still has its next job: a live one). */
function inPlace(s: JobSchedulerJson, want: { data: unknown; repeat: WantedScheduler<ScheduledJob>['repeat'] }, opts: Record<string, unknown> | undefined): boolean {
  if (typeof s.next !== 'number') return false;
  if (s.every !== want.repeat.every || s.pattern !== want.repeat.pattern || (s.tz ?? undefined) !== (want.repeat.tz ?? undefined)) return false;
  // BullMQ keeps no data for an empty one (the housekeeping scheduler's {}): read as {}, else it was written at every start.
  if (canonicalJson(s.template?.data ?? {}) !== canonicalJson(want.data)) return false;
  const had = (s.template?.opts ?? {}) as Record<string, unknown>;
  return Object.entries(opts ?? {}).every(([k, v]) => canonicalJson(had[k]) === canonicalJson(v));
}

/**
 * Schedulers a shard: each shard of a job's schedulers is put in place under a lock of its own, so processes starting
 * together share the writing (40,000 tenants: 80,000 tick schedulers, one process writing them all under one lock took
 * about a minute, past the lock's TTL) and a shard's lock is held a second or two, not the whole start.
 */
const SHARD_SIZE = 5_000;
const SHARD_LOCK_TTL_MS = 30_000;
/** A shard another process holds: waited for this long, then its schedulers are checked (the other one wrote them). */
const SHARD_WAIT_MS = 10_000;
/**
 * A shard whose wanted set was checked in full this recently (its digest matched, its schedulers' next jobs were
 * there) by any process is not checked again: a fleet starting together checks each shard once, not once a process
 * (four workers of 40,000 tenants each read all 120,000 next times and next jobs). The time is the checker's clock:
 * a fleet's machines keep theirs within a second of each other.
 */
const SHARD_FRESH_MS = 30_000;

/** The shard of a scheduler id among `count`. */
function shardOf(id: string, count: number): number {
  return count === 1 ? 0 : hash('sha256', id, 'buffer').readUInt32BE(0) % count;
}

export interface EnsuredSchedulers {
  upserted: string[];
  removed: string[];
  unchanged: number;
  /** Shards another process held throughout the wait (it was putting them in place); absent when none. */
  busy?: number[];
  /** Shards another process had checked within SHARD_FRESH_MS, as wanted here: not read again; absent when none. */
  checkedElsewhere?: number;
}

/**
 * Upserts one scheduler per wanted entry (the first of two with one id wins) unless one in place makes the same
 * jobs already, then removes this job's schedulers that are no longer wanted: a start or a change with nothing new
 * writes nothing (an upsert of an unchanged scheduler would start nothing either, but it costs a round trip and a
 * write each, 20,000 of them at 10,000 tenants).
 *
 * The schedulers are split into shards of about SHARD_SIZE by a digest of their id, each put in place under its own
 * lock (concurrent upserts of one scheduler have made duplicates and stopped schedulers: bullmq #2876, #3381), so
 * processes may call this at once: each takes the shards no one holds, starting at a shard of its own, then waits for
 * the rest and checks them. When a shard's wanted set is the one last put in place in full (a digest kept in the
 * queue's keys), nothing is read back but each scheduler's next time and whether its next job is there.
 */
export async function ensureSchedulers<K extends ScheduledJob>(
  queue: Queue,
  key: K,
  wanted: readonly WantedScheduler<K>[],
  logger?: Logger,
): Promise<EnsuredSchedulers> {
  const job = jobKind(key);
  // Every entry is checked before the queue is touched.
  const schedulers: Wanted = new Map();
  for (const w of wanted) {
    const data = parseJobData(key, w.data);
    const id = job.schedulerId?.(data);
    if (id === undefined) throw new Error(`${job.name} jobs have no scheduler id in the job table`);
    if (!schedulers.has(id)) schedulers.set(id, { data, repeat: w.repeat });
  }
  // ioredis (a Redis or a Cluster: both pipeline alike); BullMQ types it narrower.
  const client = (await queue.backend.client) as unknown as Redis;
  const count = Math.max(1, Math.ceil(schedulers.size / SHARD_SIZE));
  const shards = Array.from({ length: count }, (): Wanted => new Map());
  for (const [id, w] of schedulers) shards[shardOf(id, count)]!.set(id, w);
  const ctx: ShardContext = { queue, client, name: job.name, opts: job.scheduledOptions, count, index: undefined };
  const total: EnsuredSchedulers = { upserted: [], removed: [], unchanged: 0 };
  let shortPath = 0;
  let fresh = 0;
  const digests = shards.map((shard) => digestOf(shard, ctx.opts, count));
  /** Checked a moment ago by another process, as wanted here: counted unchanged, nothing read. */
  const checkedElsewhere = async (i: number): Promise<boolean> => {
    if (!(await checkedLately(ctx, i, digests[i]!))) return false;
    total.unchanged += shards[i]!.size;
    fresh++;
    return true;
  };
  const tryShard = async (i: number, waitMs: number): Promise<boolean> => {
    // Before the lock (none taken for such a shard), and after waiting for a holder (which may have just checked it).
    if (await checkedElsewhere(i)) return true;
    const lock = new RedisLock(client, queue.toKey(`schedulers-lock:${job.name}:${String(i)}`), SHARD_LOCK_TTL_MS);
    if (!(waitMs > 0 ? await lock.acquireWithin(waitMs) : await lock.acquire())) return false;
    const held = keepAlive(lock, SHARD_LOCK_TTL_MS / 3);
    try {
      if (waitMs > 0 && (await checkedElsewhere(i))) return true;
      const done = await ensureShard(ctx, i, shards[i]!, digests[i]!, held.signal);
      total.upserted.push(...done.upserted);
      total.removed.push(...done.removed);
      total.unchanged += done.unchanged;
      if (done.short) shortPath++;
      return true;
    } finally {
      held.stop();
      await lock.release();
    }
  };
  // Each process starts at a shard of its own, so processes starting together take different shards first.
  const first = randomInt(count);
  const takenElsewhere: number[] = [];
  for (let k = 0; k < count; k++) {
    const i = (first + k) % count;
    if (!(await tryShard(i, 0))) takenElsewhere.push(i);
  }
  const busy: number[] = [];
  for (const i of takenElsewhere) if (!(await tryShard(i, SHARD_WAIT_MS))) busy.push(i);
  // In wanted order (the shards' order is the processes' own).
  const order = new Map([...schedulers.keys()].map((id, n) => [id, n]));
  total.upserted.sort((a, b) => order.get(a)! - order.get(b)!);
  logger?.info(
    { job: job.name, upserted: total.upserted.length, unchanged: total.unchanged, removed: total.removed.slice(0, 20), removedCount: total.removed.length, shards: count, unchangedShards: shortPath, checkedElsewhere: fresh, busy },
    'schedulers in place',
  );
  return { ...total, ...(busy.length > 0 ? { busy } : {}), ...(fresh > 0 ? { checkedElsewhere: fresh } : {}) };
}

type Wanted = Map<string, { data: unknown; repeat: WantedScheduler<ScheduledJob>['repeat'] }>;

interface ShardContext {
  queue: Queue;
  client: Redis;
  name: string;
  opts: unknown;
  count: number;
  /** The ids in the queue's scheduler index by shard, read and split once a call when a shard goes the long way (its prune). */
  index: Promise<Map<number, string[]>> | undefined;
}

/** The wanted set of a shard (ids, data, repeat options and the job's scheduled options), as one digest. */
function digestOf(schedulers: Wanted, opts: unknown, count: number): string {
  // The digest of canonicalJson({ opts, count, entries }), its text fed to the hash piece by piece (not one string of
  // the whole shard): `{"count":…,"entries":[[id,data,repeat],…],"opts":…}`, keys in order.
  const ids = [...schedulers.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const h = createHash('sha256').update(`{"count":${String(count)},"entries":[`);
  let chunk = '';
  ids.forEach((id, n) => {
    const w = schedulers.get(id)!;
    chunk += (n === 0 ? '' : ',') + canonicalJson([id, w.data, w.repeat]);
    if (chunk.length >= 65_536) {
      h.update(chunk);
      chunk = '';
    }
  });
  return h.update(`${chunk}],"opts":${canonicalJson(opts ?? null)}}`).digest('hex');
}

/**
 * Who checked a shard: a connection of a process (each process has its own), so a process's own later call always
 * checks (a call after a stopped scheduler mends it) while another process's skips what was checked a moment ago.
 */
const checkers = new WeakMap<object, string>();
function checkerOf(client: Redis): string {
  let id = checkers.get(client);
  if (id === undefined) checkers.set(client, (id = randomUUID()));
  return id;
}

/** The hash of when each shard was last checked in full and by whom (`<ms> <process>`, the checker's clock), beside its digest. */
function checkedKey(ctx: ShardContext): string {
  return ctx.queue.toKey(`schedulers-checked:${ctx.name}`);
}

function checkedNow(ctx: ShardContext): string {
  return `${String(Date.now())} ${checkerOf(ctx.client)}`;
}

/** Whether shard `i` holds `digest` and was checked within SHARD_FRESH_MS by another process. */
async function checkedLately(ctx: ShardContext, i: number, digest: string): Promise<boolean> {
  const field = `${String(i)}/${String(ctx.count)}`;
  const [kept, checked] = await Promise.all([ctx.client.hget(ctx.queue.toKey(`schedulers-digests:${ctx.name}`), field), ctx.client.hget(checkedKey(ctx), field)]);
  if (kept !== digest || checked === null) return false;
  const [at, by] = checked.split(' ');
  if (by === checkerOf(ctx.client)) return false;
  const age = Date.now() - Number(at);
  return Number.isFinite(age) && age >= -SHARD_FRESH_MS && age < SHARD_FRESH_MS;
}

/** Each id's next time in the queue's scheduler index (ZMSCORE, 1,000 ids a command). */
async function nextOf(ctx: ShardContext, ids: readonly string[]): Promise<Map<string, number>> {
  const next = new Map<string, number>();
  for (let i = 0; i < ids.length; i += 1_000) {
    const part = ids.slice(i, i + 1_000);
    const scores = await ctx.client.zmscore(ctx.queue.toKey('repeat'), ...part);
    part.forEach((id, n) => {
      const s = scores[n];
      if (s !== null && s !== undefined) next.set(id, Number(s));
    });
  }
  return next;
}

/** The ids of shard `i` in the queue's scheduler index (every job's of the queue). */
async function indexedIn(ctx: ShardContext, i: number): Promise<readonly string[]> {
  ctx.index ??= ctx.client.zrange(ctx.queue.toKey('repeat'), 0, -1).then((ids) => {
    const byShard = new Map<number, string[]>();
    for (const id of ids) {
      const s = shardOf(id, ctx.count);
      const list = byShard.get(s);
      if (list) list.push(id);
      else byShard.set(s, [id]);
    }
    return byShard;
  });
  return (await ctx.index).get(i) ?? [];
}

/**
 * One shard, under its lock. Its digest gone before the first write and set after the last: a start that dies
 * half-way leaves none, and the next one reads the shard back in full.
 */
async function ensureShard(ctx: ShardContext, i: number, shard: Wanted, digest: string, signal: AbortSignal): Promise<{ upserted: string[]; removed: string[]; unchanged: number; short: boolean }> {
  const { queue, client, name, opts, count } = ctx;
  const digests = queue.toKey(`schedulers-digests:${name}`);
  const field = `${String(i)}/${String(count)}`;
  const ids = [...shard.keys()];
  const [next, kept] = await Promise.all([nextOf(ctx, ids), client.hget(digests, field)]);
  if (kept === digest) {
    // The set in place is the wanted one, less what went missing: nothing is read back or removed.
    const live = await liveOf(queue, client, ids.map((id) => [id, next.get(id)] as const));
    const upserted = ids.filter((id) => !live.has(id));
    await upsertAll(queue, name, opts, shard, upserted, signal);
    signal.throwIfAborted();
    await client.hset(checkedKey(ctx), field, checkedNow(ctx));
    return { upserted, removed: [], unchanged: ids.length - upserted.length, short: true };
  }
  await Promise.all([client.hdel(digests, field), client.hdel(checkedKey(ctx), field)]);
  // A scheduler in place whose next job is gone has stopped (bullmq #3381): it is upserted again. Whether the job is
  // there is one EXISTS of its hash, pipelined (getJobState looked through the wait list, O(waiting jobs) each).
  const had = new Map<string, JobSchedulerJson>();
  await inBatches(
    ids.filter((id) => next.has(id)),
    async (id) => {
      const s = await queue.getJobScheduler(id);
      if (s !== undefined && s.name === name) had.set(id, s);
    },
  );
  const candidates = ids.filter((id) => {
    const s = had.get(id);
    return s !== undefined && inPlace(s, shard.get(id)!, opts as Record<string, unknown> | undefined);
  });
  const live = await liveOf(queue, client, candidates.map((id) => [id, next.get(id)] as const));
  const upserted = ids.filter((id) => !live.has(id));
  await upsertAll(queue, name, opts, shard, upserted, signal);
  // This job's schedulers of this shard that are no longer wanted (the index holds every job's of the queue).
  const others = (await indexedIn(ctx, i)).filter((id) => !shard.has(id));
  const removed: string[] = [];
  await inBatches(others, async (id) => {
    if ((await queue.getJobScheduler(id))?.name !== name) return;
    signal.throwIfAborted();
    await queue.removeJobScheduler(id);
    removed.push(id);
  });
  // Digests of another shard count (the set grew or shrank past a shard's size) are dropped with the first shard,
  // and the one digest of a job's whole set that came before shards.
  if (i === 0) {
    for (const key of [digests, checkedKey(ctx)]) {
      const stale = (await client.hkeys(key)).filter((f) => !f.endsWith(`/${String(count)}`));
      if (stale.length > 0) await client.hdel(key, ...stale);
    }
    await client.del(queue.toKey(`schedulers-digest:${name}`));
  }
  signal.throwIfAborted();
  await Promise.all([client.hset(digests, field, digest), client.hset(checkedKey(ctx), field, checkedNow(ctx))]);
  return { upserted, removed, unchanged: ids.length - upserted.length, short: false };
}

/**
 * The schedulers among `ids` that are there and live: their next job (`repeat:<id>:<next>`) exists. A stopped one
 * (bullmq #3381) has a next time and no job. One EXISTS each, pipelined (a queue's keys share one hash tag).
 */
async function liveOf(queue: Queue, client: Redis, ids: readonly (readonly [string, number | undefined])[]): Promise<Set<string>> {
  const live = new Set<string>();
  const known = ids.filter(([, next]) => next !== undefined);
  if (known.length === 0) return live;
  const pipe = client.pipeline();
  for (const [id, next] of known) pipe.exists(queue.toKey(`repeat:${id}:${String(next)}`));
  const replies = (await pipe.exec()) ?? [];
  known.forEach(([id], i) => {
    if (replies[i]?.[1] === 1) live.add(id);
  });
  return live;
}

async function upsertAll(queue: Queue, name: string, opts: unknown, schedulers: Wanted, ids: readonly string[], signal: AbortSignal): Promise<void> {
  await inBatches(ids, async (id) => {
    signal.throwIfAborted();
    const want = schedulers.get(id)!;
    try {
      await queue.upsertJobScheduler(id, want.repeat, { name, data: want.data, ...(opts ? { opts } : {}) });
    } catch (err) {
      throw new Error(`scheduler ${id}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * Where in its interval a tenant's reconcile pass falls (ms): a digest of its id, so 10,000 tenants' passes spread over
 * the interval instead of all coming at once, and the first does not come at the start when the tenant's first
 * incremental run (at once, on `every`) reads everything already.
 */
export function reconcileOffsetMs(tenantId: string, everyMs: number): number {
  return 1 + (hash('sha256', tenantId, 'buffer').readUInt32BE(0) % Math.max(1, everyMs - 1));
}

/** Two schedulers per tenant: incremental runs (`every` or `cron`) and the reconcile pass (`reconcileEvery`). */
export async function ensureTickSchedules(scheduleQueue: Queue, tenants: readonly TenantConfig[], logger?: Logger): Promise<EnsuredSchedulers> {
  const wanted = tenants.flatMap((t): WantedScheduler<'tick'>[] => [
    {
      data: { tenantId: t.id, mode: 'incremental' },
      repeat: t.schedule.cron !== undefined ? { pattern: t.schedule.cron, ...(t.schedule.tz ? { tz: t.schedule.tz } : {}) } : { every: t.schedule.every ?? DEFAULT_EVERY_MS },
    },
    // A tenant on `every` runs its first incremental at once (a full read): its reconcile pass falls at its offset.
    // One on `cron` waits for its pattern: its reconcile pass comes at once, as its first run.
    {
      data: { tenantId: t.id, mode: 'reconcile' },
      repeat: t.schedule.cron !== undefined ? { every: t.schedule.reconcileEvery } : { every: t.schedule.reconcileEvery, offset: reconcileOffsetMs(t.id, t.schedule.reconcileEvery) },
    },
  ]);
  return ensureSchedulers(scheduleQueue, 'tick', wanted, logger);
}

/**
 * One scheduler per client on the refresh-token queue (`every` = `everyMs`), each at an offset of its own in the
 * interval (a digest of the client key): 10,000 clients' checks came all at once at a start and every `everyMs`
 * after, a burst in the refresh queue that an on-demand rotation (a run's first token) waited behind. The schedulers
 * of clients no longer listed are removed. The scheduled job rotates only when the token is within its margin of
 * expiry (a client with no token yet is left to its first request).
 */
export async function ensureRefreshSchedules(
  queue: Queue,
  clients: readonly ScheduledClient[],
  everyMs: number,
  logger?: Logger,
): Promise<EnsuredSchedulers> {
  const wanted = clients.map((c): WantedScheduler<'refresh'> => ({
    data: { clientKey: c.clientKey, tenantId: c.tenantId, reason: 'scheduled' },
    repeat: { every: everyMs, offset: reconcileOffsetMs(c.clientKey, everyMs) },
  }));
  return ensureSchedulers(queue, 'refresh', wanted, logger);
}

/**
 * The fleet's one housekeeping scheduler (`every` = `everyMs`). A new or changed scheduler runs its first pass at
 * once (BullMQ: an `every` scheduler starts immediately); re-upserting it unchanged starts nothing.
 */
export async function ensureHousekeepingSchedule(scheduleQueue: Queue, everyMs = HOUSEKEEPING_EVERY_MS, logger?: Logger): Promise<EnsuredSchedulers> {
  return ensureSchedulers(scheduleQueue, 'housekeeping', [{ data: {}, repeat: { every: everyMs } }], logger);
}
