/**
 * Redis bytes per synced record: a file tenant's first sync of a mixed data set (contacts, invoices, payments as
 * the sample generator makes them), Redis `used_memory` before the deployment and after its workers stopped,
 * divided by the records synced. Redis's own bookkeeping that the run fills and that does not grow with records
 * (a latency histogram per command name, about 40 KB each with the default `latency-tracking yes`, and the slow
 * log's 128 entries: together about 1.4 MB, 30 B/record at 48,000 records) is released first (CONFIG RESETSTAT,
 * SLOWLOG RESET) and reported on its own (`bookkeepingMb`), so the figure is what the records hold. Beside it, where the bytes are: MEMORY USAGE of every key of the tenant, summed
 * by key kind (`ids`, `cache`, `ledger`, ...), and the encoding Redis chose for the largest key of each kind.
 * Two sizes a factor apart show whether memory grows linearly (the per-record figure stays flat).
 */
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { keyBase } from '../../src/redis/keys.js';
import { writeDataSet } from '../data.js';
import { assertSucceeded, deploy, runMs, type Bench } from '../harness.js';

export interface RedisBytesConfig {
  /** Contacts of the smaller data set (about 4.75 records each with their invoices and payments). */
  contacts: number;
  /** The larger data set is `factor` times the smaller one; 1 runs one size only. */
  factor: number;
  syncConcurrency: number;
}

export interface KindBytes {
  keys: number;
  bytes: number;
  /** Encoding of the kind's largest key (listpack, hashtable, ...). */
  encoding: string;
}

export interface RedisBytesRow {
  records: number;
  contacts: number;
  invoices: number;
  payments: number;
  runMs: number;
  /** `used_memory` after minus before, per synced record. */
  bytesPerRecord: number;
  usedMemoryDeltaMb: number;
  /** What CONFIG RESETSTAT and SLOWLOG RESET released after the run (fixed Redis bookkeeping, not records). */
  bookkeepingMb: number;
  /** MEMORY USAGE of the tenant's keys by kind, per record of the data set. */
  byKind: Record<string, KindBytes & { perRecord: number }>;
}

export interface RedisBytesResult {
  config: RedisBytesConfig;
  rows: RedisBytesRow[];
  /** bytesPerRecord of the larger set over the smaller (ideal 1.0: linear growth). */
  growthRatio: number | undefined;
}

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;

/** Redis's bookkeeping that fills with commands run and does not grow with records (decision 41). */
export async function releaseBookkeeping(redis: Redis): Promise<void> {
  await redis.call('SLOWLOG', 'RESET');
  await redis.call('CONFIG', 'RESETSTAT');
}

export async function usedMemory(redis: Redis): Promise<number> {
  const m = /^used_memory:(\d+)/m.exec(await redis.info('memory'));
  if (!m?.[1]) throw new Error('INFO memory has no used_memory');
  return Number(m[1]);
}

/** The kind of a key `<base>:<kind...>:{<owner>}[:...]`: the words between the base and the owner's tag. */
function kindOf(base: string, key: string): string {
  const rest = key.startsWith(`${base}:`) ? key.slice(base.length + 1) : key;
  const tag = rest.indexOf(':{');
  return tag < 0 ? rest.split(':')[0] ?? rest : rest.slice(0, tag);
}

/** MEMORY USAGE (all samples) of every key under `prefix`, by kind (the tenant's keys by their kind). */
export async function bytesByKind(redis: Redis, prefix: string, tenant: string): Promise<Record<string, KindBytes>> {
  const base = keyBase(prefix);
  const out: Record<string, KindBytes & { largest: number }> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const bytes = Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      // Keys of no tenant (the queues' BullMQ keys, deployment-wide keys) are summed as one kind.
      const kind = key.includes(`{${tenant}}`) ? kindOf(base, key) : 'not the tenant\'s (queues, ...)';
      const k = (out[kind] ??= { keys: 0, bytes: 0, encoding: '', largest: -1 });
      k.keys += 1;
      k.bytes += bytes;
      if (bytes > k.largest) {
        k.largest = bytes;
        k.encoding = String(await redis.call('OBJECT', 'ENCODING', key));
      }
    }
  } while (cursor !== '0');
  return Object.fromEntries(Object.entries(out).map(([kind, { largest: _l, ...k }]) => [kind, k]));
}

async function one(bench: Bench, cfg: RedisBytesConfig, name: string, contacts: number): Promise<RedisBytesRow> {
  const folder = join(bench.root, `rb-${name}`);
  const data = await writeDataSet(folder, { contacts, seed: 11, idPrefix: 'R' });
  const tenant = `rb-${name}`;
  // The bookkeeping the sections before this one filled is released before `before` too: released only after the
  // run, it came off this run's delta (a full bench gave 81 B per record where this section alone gives 115).
  await releaseBookkeeping(bench.admin);
  const before = await usedMemory(bench.admin);
  const d = await deploy(bench, tenant, [{ id: tenant, folder }], 1, { SYNC_CONCURRENCY: String(cfg.syncConcurrency) });
  let ms: number;
  try {
    const run = await d.sync(tenant, 'full');
    assertSucceeded(run, tenant);
    ms = runMs(run);
  } finally {
    await d.close();
  }
  const withBookkeeping = await usedMemory(bench.admin);
  await releaseBookkeeping(bench.admin);
  const after = await usedMemory(bench.admin);
  const kinds = await bytesByKind(bench.admin, d.prefix, tenant);
  const byKind = Object.fromEntries(
    Object.entries(kinds)
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .map(([kind, k]) => [kind, { ...k, perRecord: round(k.bytes / data.records) }]),
  );
  const row: RedisBytesRow = {
    records: data.records,
    contacts: data.contacts,
    invoices: data.invoices,
    payments: data.payments,
    runMs: ms,
    bytesPerRecord: round((after - before) / data.records),
    usedMemoryDeltaMb: round((after - before) / 1024 / 1024, 2),
    bookkeepingMb: round((withBookkeeping - after) / 1024 / 1024, 2),
    byKind,
  };
  const parts = Object.entries(byKind)
    .map(([kind, k]) => `${kind} ${k.perRecord} (${k.keys} keys, ${k.encoding})`)
    .join(', ');
  bench.log(`  ${data.records} records (${data.contacts}/${data.invoices}/${data.payments}): ${row.bytesPerRecord} B/record (used_memory +${row.usedMemoryDeltaMb} MB, after ${row.bookkeepingMb} MB of Redis bookkeeping released); by kind, B/record: ${parts}`);
  return row;
}

export async function runRedisBytesSection(bench: Bench, cfg: RedisBytesConfig): Promise<RedisBytesResult> {
  bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
  const rows = [await one(bench, cfg, 'small', cfg.contacts)];
  if (cfg.factor > 1) rows.push(await one(bench, cfg, 'large', cfg.contacts * cfg.factor));
  const [small, large] = rows;
  return { config: cfg, rows, growthRatio: small && large ? round(large.bytesPerRecord / small.bytesPerRecord, 2) : undefined };
}
