/**
 * Moves the keys of the layout before issue 13 (`<KEY_PREFIX>:<kind...>:<owner>[:<part>...]`, every key in the
 * prefix's one slot) to today's (`<base>:<kind...>:{<owner>}[:<part>...]`, src/redis/keys.ts). Kept: each
 * configured tenant's state (id maps and hashes, intents, cursors, checkpoint, dead letters, pending invoices,
 * payment ledger, runs, record mirror, flags, call ledger, campaign index), call campaigns, Xero tokens. Left
 * alone: short-lived keys (locks, rate-limit counters, the token protocol's keys: a new token is fetched) and
 * BullMQ's old queues (under KEY_PREFIX itself, today under `queuePrefix`): their jobs are not moved (a job's
 * keys, ids and scripts are BullMQ's, and a run requested again does the same work), only counted, so the dry
 * run says which jobs the old version left waiting (drain them before the upgrade, or request those runs again
 * after it); schedules are recreated at start.
 *
 * One key at a time with DUMP/RESTORE (type, value and TTL kept, across cluster nodes), then the old key is
 * deleted. Idempotent and resumable: a key whose new name exists is already moved (its old copy, if a kill left
 * one, is deleted). A dry run (the default) only counts.
 */
import type { Redis } from 'ioredis';
import { campaignKey, connectionKey, legacyKey, tenantKey } from './keys.js';
import { nodesOf } from './connection.js';
import { existsEach } from './exists.js';

type Scope = 'tenant' | 'campaign' | 'connection' | 'ephemeral';

/** Every kind the old layout had, by owner scope (the same words as today's stores use). */
const KINDS: { scope: Scope; kind: readonly string[] }[] = [
  ...['ids', 'intents', 'cursors', 'checkpoint', 'dead', 'pending', 'ledger', 'runs', 'cache', 'flags'].map((k) => ({ scope: 'tenant' as const, kind: [k] })),
  { scope: 'tenant', kind: ['calls', 'ledger'] },
  { scope: 'tenant', kind: ['calls', 't'] },
  { scope: 'campaign', kind: ['calls', 'c'] },
  { scope: 'ephemeral', kind: ['xero', 'app'] },
  { scope: 'connection', kind: ['xero'] },
  { scope: 'ephemeral', kind: ['lock'] },
  { scope: 'ephemeral', kind: ['auth'] },
];
const BY_LENGTH = [...KINDS].sort((a, b) => b.kind.length - a.kind.length);

export interface OldKey {
  key: string;
  scope: Scope;
  owner: string;
  /** Today's name, when the key is to be kept. */
  target?: string;
}

/** What an old key is, or undefined for a key that is not ours (today's layout, BullMQ's queues). */
export function classifyOldKey(prefix: string, key: string): OldKey | undefined {
  if (!key.startsWith(`${prefix}:`)) return undefined;
  const segments = key.slice(prefix.length + 1).split(':');
  for (const { scope, kind } of BY_LENGTH) {
    if (segments.length <= kind.length || kind.some((w, i) => segments[i] !== w)) continue;
    const owner = segments[kind.length] ?? '';
    // Today's keys carry `{owner}`: with a KEY_PREFIX without braces both layouts share the start.
    if (owner.startsWith('{') || owner === '') return undefined;
    const parts = segments.slice(kind.length + 1);
    const lock = kind[0] === 'lock';
    if (scope === 'ephemeral' || lock) return { key, scope: 'ephemeral', owner };
    if (scope === 'connection') {
      // Of a Xero connection only its tokens last; its limits and the rotation lock are short-lived.
      return parts.length === 1 && parts[0] === 'oauth' ? { key, scope, owner, target: connectionKey(prefix, owner, kind, ...parts) } : { key, scope: 'ephemeral', owner };
    }
    if (scope === 'campaign') return { key, scope, owner, target: campaignKey(prefix, owner, kind, ...parts) };
    try {
      return { key, scope, owner, target: tenantKey(prefix, owner, kind, ...parts) };
    } catch {
      return undefined; // not a tenant id: not a key of ours
    }
  }
  return undefined;
}

export interface MigrationReport {
  /** true: keys were moved; false: a dry run. */
  applied: boolean;
  moved: number;
  /** Dry run: keys that would move. */
  wouldMove: number;
  /** Already at their new name (a rerun after a kill, or a worker wrote them). */
  already: number;
  /** Short-lived keys left to expire. */
  shortLived: number;
  /** Kept keys of tenants that are not in the tenants file: left in place, by tenant. */
  otherTenants: Record<string, number>;
  /** Moved (or to move) per tenant, campaign and connection. */
  byOwner: Record<string, number>;
  /** Stopped after `limit` moves; run again to go on. */
  stopped: boolean;
  /** Jobs in the old layout's BullMQ queues (not moved, see above), by queue; queues without any left out. */
  oldQueueJobs: Record<string, OldQueueJobs>;
}

export interface OldQueueJobs {
  /** Waiting, paused or prioritized: requested, never started. */
  waiting: number;
  delayed: number;
  /** Started by a worker of the old version (it finishes or stalls there). */
  active: number;
}

/** The jobs of each old queue (BullMQ's keys under `<KEY_PREFIX>:<queue>:`), read with plain commands. */
export async function oldQueueJobs(redis: Redis, prefix: string, queues: readonly string[]): Promise<Record<string, OldQueueJobs>> {
  const out: Record<string, OldQueueJobs> = {};
  for (const queue of queues) {
    const k = (suffix: string): string => `${prefix}:${queue}:${suffix}`;
    const count = async (key: string): Promise<number> => {
      const type = await redis.type(key);
      return type === 'list' ? redis.llen(key) : type === 'zset' ? redis.zcard(key) : 0;
    };
    const jobs: OldQueueJobs = {
      waiting: (await count(k('wait'))) + (await count(k('paused'))) + (await count(k('prioritized'))),
      delayed: await count(k('delayed')),
      active: await count(k('active')),
    };
    if (jobs.waiting + jobs.delayed + jobs.active > 0) out[queue] = jobs;
  }
  return out;
}

export interface MigrateOptions {
  prefix: string;
  /** The tenants of the tenants file: only their state moves. */
  tenants: readonly string[];
  apply: boolean;
  /** Move at most this many keys, then stop (batches; resumable). */
  limit?: number;
  onMoved?: (key: OldKey) => void;
  /** The BullMQ queue names whose old jobs to count (QUEUES). */
  queues?: readonly string[];
}

function escapeGlob(s: string): string {
  return s.replace(/([*?[\]\\])/g, '\\$1');
}

/** Every old-layout key, server by server (old keys share one slot, so one master of a cluster holds them). */
async function* oldKeys(redis: Redis, prefix: string): AsyncGenerator<string> {
  for (const node of nodesOf(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${escapeGlob(prefix)}:*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) yield k;
    } while (cursor !== '0');
  }
}

export async function migrateKeys(redis: Redis, options: MigrateOptions): Promise<MigrationReport> {
  const { prefix, apply } = options;
  const tenants = new Set(options.tenants);
  const report: MigrationReport = { applied: apply, moved: 0, wouldMove: 0, already: 0, shortLived: 0, otherTenants: {}, byOwner: {}, stopped: false, oldQueueJobs: await oldQueueJobs(redis, prefix, options.queues ?? []) };
  for await (const key of oldKeys(redis, prefix)) {
    const old = classifyOldKey(prefix, key);
    if (!old) continue;
    if (!old.target) {
      report.shortLived += 1;
      continue;
    }
    if (old.scope === 'tenant' && !tenants.has(old.owner)) {
      report.otherTenants[old.owner] = (report.otherTenants[old.owner] ?? 0) + 1;
      continue;
    }
    if ((await redis.exists(old.target)) === 1) {
      report.already += 1;
      if (apply) await redis.unlink(key);
      continue;
    }
    const label = `${old.scope} ${old.owner}`;
    report.byOwner[label] = (report.byOwner[label] ?? 0) + 1;
    if (!apply) {
      report.wouldMove += 1;
      continue;
    }
    if (options.limit !== undefined && report.moved >= options.limit) {
      report.stopped = true;
      report.byOwner[label] -= 1;
      break;
    }
    const dump = await redis.dumpBuffer(key);
    if (dump === null) continue; // gone meanwhile
    const pttl = await redis.pttl(key);
    if (pttl === -2) continue;
    try {
      await redis.restore(old.target, pttl > 0 ? pttl : 0, dump);
    } catch (err) {
      if (!/BUSYKEY/.test((err as Error).message)) throw err;
    }
    await redis.unlink(key);
    report.moved += 1;
    options.onMoved?.(old);
  }
  return report;
}

/** Keys that tell whether a tenant has state: its id maps (packed or not), cursors and dead letters. */
const MARKERS: { kind: string; parts: string[] }[] = [
  { kind: 'ids', parts: ['contacts'] },
  { kind: 'ids', parts: ['invoices'] },
  { kind: 'rec', parts: ['contacts'] },
  { kind: 'rec', parts: ['invoices'] },
  { kind: 'cursors', parts: [] },
  { kind: 'dead', parts: [] },
];

/**
 * The configured tenants whose state is still in the old layout only (old keys there, new ones not): a worker
 * must not start on them (it would adopt every contact again). Reads a few keys per tenant, no SCAN: the old keys of
 * every tenant in pipelined batches (src/redis/exists.ts), then today's keys of the few tenants that have old ones
 * (a start of 10,000 tenants sent 120,000 EXISTS one after another: most of its time).
 */
export async function tenantsNotMoved(redis: Redis, prefix: string, tenants: readonly string[]): Promise<string[]> {
  // Old keys share the prefix's slot only when the prefix has braces: on a cluster they are asked one by one.
  const old = await existsEach(redis, tenants.map((t) => MARKERS.map(({ kind, parts }) => legacyKey(prefix, kind, t, ...parts))), { oneSlot: false });
  const withOld = tenants.filter((_, i) => (old[i] ?? 0) > 0);
  // Today's keys of a tenant share its hash tag: one EXISTS a tenant.
  const now = await existsEach(redis, withOld.map((t) => MARKERS.map(({ kind, parts }) => tenantKey(prefix, t, kind, ...parts))), { oneSlot: true });
  return withOld.filter((_, i) => (now[i] ?? 0) === 0);
}
