/**
 * Soak: a small fleet left running under fire for a long time (BENCH_SOAK_MIN, default 60 minutes; run only when
 * named: `npm run bench -- --only soak`). Six file tenants on their own schedules (an incremental every 15 s, a
 * reconcile every 5 min), three worker processes; every `killEveryS` one of two of them is killed with SIGKILL and
 * started again (the third lives throughout: its RSS is the one that tells whether a worker grows); every
 * `changeEveryS` a tenth of one tenant's contacts are renamed; the service answers a few requests with 5xx, 429,
 * resets and commits whose answer is lost, and rotates tokens every `tokenLifetimeS`; run webhooks go to a receiver
 * here. Sampled every `sampleEveryS`: the steady worker's RSS and live heap (after a full collection), Redis
 * `used_memory`. The figures: growth over the second half (the median of the last tenth of the samples against the
 * median of the tenth around the half), and where Redis's bytes are at the half and at the end, by key kind. At the
 * end, with the faults off and every tenant's last changes synced: every record in the service once.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { DEFAULT_JOB_OPTIONS, QUEUES, requestSync } from '../../src/queues/index.js';
import { keyBase, queuePrefix } from '../../src/redis/keys.js';
import { createStateStores, waitForRun } from '../../src/state/index.js';
import { writeDataSet, type DataSet } from '../data.js';
import { clientIdOf, secretOf, type Bench } from '../harness.js';
import { spawnBenchWorker, type BenchWorker } from '../workers.js';
import { releaseBookkeeping, usedMemory } from './redis-bytes.js';

export interface SoakConfig {
  minutes: number;
  tenants: number;
  contacts: number;
  workers: number;
  latencyMs: number;
  killEveryS: number;
  changeEveryS: number;
  sampleEveryS: number;
  tokenLifetimeS: number;
  /** The tenants' schedule (`every`, `reconcileEvery`). */
  every: string;
  reconcileEvery: string;
}

export interface SoakSample {
  /** Seconds since the start. */
  t: number;
  steadyRssMb: number;
  steadyHeapMb: number;
  redisMb: number;
}

export interface SoakResult {
  config: SoakConfig;
  samples: SoakSample[];
  /** (end - half) / half, in %: the median of the last tenth of the samples against the tenth around the half. */
  secondHalfGrowthPct: { steadyRss: number; steadyHeap: number; redis: number };
  /** MEMORY USAGE of the deployment's keys by kind (KB), at the half and at the end. */
  redisKbByKind: { half: Record<string, number>; end: Record<string, number> };
  /** Runs that ended, from their run.finished webhooks (one per webhook-id). */
  runs: { succeeded: number; other: number };
  kills: number;
  changes: number;
  webhooksReceived: number;
  tokensIssued: number;
  /** After the faults stopped and a last incremental of each tenant: contacts and invoices in the service, duplicates, missing. */
  landed: { contacts: number; invoices: number; duplicates: number; missing: number; stale: number };
}

const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const mb = (bytes: number): number => round(bytes / 1024 / 1024);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2;
};

/** BENCH_SOAK_MIN=15: another length than the plan's. */
export function soakMinutesFromEnv(minutes: number): number {
  const raw = Number(process.env['BENCH_SOAK_MIN']);
  return Number.isFinite(raw) && raw > 0 ? raw : minutes;
}

/** MEMORY USAGE (KB) of the deployment's keys by kind: a queue's keys by queue, the rest by their words up to the owner's tag (`runs`, `rec`...). */
async function kbByKind(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const base = keyBase(prefix);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const rest = key.slice(base.length + 1);
      const tag = rest.indexOf(':{');
      // A queue's keys (`{sync}:...`) by queue; the rest by their words up to the owner's tag.
      const kind = rest.startsWith('{') ? `queue ${rest.slice(0, rest.indexOf('}') + 1)}` : tag < 0 ? rest.split(':')[0] ?? rest : rest.slice(0, tag);
      out[kind] = (out[kind] ?? 0) + Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) / 1024;
    }
  } while (cursor !== '0');
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, round(v)]));
}

/** Renames a tenth of a tenant's contacts (which tenth turns with `round`), stamped now; written whole, then renamed into place. */
async function changeContacts(folder: string, round: number): Promise<void> {
  const path = join(folder, 'contacts.ndjson');
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l.length > 0);
  const now = new Date().toISOString();
  const out = lines.map((line, i) => {
    if (i % 10 !== round % 10) return line;
    const c = JSON.parse(line) as { name: string; updatedAt: string };
    return JSON.stringify({ ...c, name: `${c.name.replace(/ r\d+$/, '')} r${round}`, updatedAt: now });
  });
  await writeFile(`${path}.tmp`, `${out.join('\n')}\n`);
  await rename(`${path}.tmp`, path);
}

export async function runSoakSection(bench: Bench, cfg: SoakConfig): Promise<SoakResult> {
  cfg = { ...cfg, minutes: soakMinutesFromEnv(cfg.minutes) };
  const faults = { latencyMs: cfg.latencyMs, jitterMs: Math.floor(cfg.latencyMs / 2), rateLimitPerSecond: null, error5xxRate: 0.01, rate429: 0.005, retryAfterS: 1, resetRate: 0.005, dropAfterCommitRate: 0.005 };
  bench.sim.setFaults(faults);
  bench.sim.setTokenLifetime(cfg.tokenLifetimeS * 1000);
  const prefix = `{bench-soak}`;
  const ids = Array.from({ length: cfg.tenants }, (_, i) => `soak-${i}`);
  const data = new Map<string, DataSet>();
  for (const [i, id] of ids.entries()) data.set(id, await writeDataSet(join(bench.root, `soak-${i}`), { contacts: cfg.contacts, seed: 100 + i, idPrefix: `S${i}` }));
  const tenantsFile = join(bench.root, 'tenants-soak.json');
  await writeFile(
    tenantsFile,
    JSON.stringify({
      tenants: ids.map((id) => ({ id, collections: { clientId: clientIdOf(id), clientSecret: secretOf(id) }, platform: { kind: 'file', path: data.get(id)!.folder }, schedule: { every: cfg.every, reconcileEvery: cfg.reconcileEvery } })),
    }),
  );
  for (const id of ids) bench.sim.setClient(clientIdOf(id), secretOf(id));
  // Run outcomes as the run.finished webhooks tell them (the run history keeps only RUNS_KEPT a tenant), one per webhook-id.
  let webhooksReceived = 0;
  const outcomes = new Map<string, string>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => void (body += d.toString()));
    req.on('end', () => {
      webhooksReceived += 1;
      try {
        const e = JSON.parse(body) as { type?: string; data?: { outcome?: string } };
        if (e.type === 'run.finished') outcomes.set(String(req.headers['webhook-id']), e.data?.outcome ?? 'unknown');
      } catch {
        // counted, not parsed
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const env = {
    ...bench.single.env,
    KEY_PREFIX: prefix,
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    TENANTS_FILE: tenantsFile,
    BENCH_SCHEDULES: '1',
    RUN_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    RUN_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    TENANT_IDLE_S: '60',
  };
  const workers: BenchWorker[] = [];
  for (let i = 0; i < cfg.workers; i += 1) workers.push(await spawnBenchWorker(env, 120_000));
  const tokens0 = bench.sim.counters().tokensIssuedTotal;
  const started = Date.now();
  const endAt = started + cfg.minutes * 60_000;
  const samples: SoakSample[] = [];
  let half: Record<string, number> = {};
  let kills = 0;
  let changes = 0;
  let nextKill = started + cfg.killEveryS * 1000;
  let nextChange = started + cfg.changeEveryS * 1000;
  let nextSample = started;
  try {
    while (Date.now() < endAt) {
      const now = Date.now();
      if (now >= nextSample) {
        nextSample += cfg.sampleEveryS * 1000;
        const steady = await workers[0]!.stats();
        const s: SoakSample = { t: Math.round((now - started) / 1000), steadyRssMb: mb(steady.rssBytes), steadyHeapMb: mb(steady.heapUsedBytes), redisMb: mb(await usedMemory(bench.admin)) };
        samples.push(s);
        bench.log(`  ${s.t} s: steady worker RSS ${s.steadyRssMb} MB (live heap ${s.steadyHeapMb}), Redis ${s.redisMb} MB; ${kills} kills, ${changes} changes, ${webhooksReceived} webhooks`);
        if (Object.keys(half).length === 0 && now - started >= (endAt - started) / 2) half = await kbByKind(bench.admin, prefix);
      }
      if (now >= nextKill && workers.length > 1) {
        nextKill += cfg.killEveryS * 1000;
        const slot = 1 + (kills % (workers.length - 1));
        await workers[slot]!.kill();
        kills += 1;
        workers[slot] = await spawnBenchWorker(env, 120_000);
      }
      if (now >= nextChange) {
        nextChange += cfg.changeEveryS * 1000;
        changes += 1;
        await changeContacts(data.get(ids[changes % ids.length]!)!.folder, changes);
      }
      await sleep(500);
    }
    const end = await kbByKind(bench.admin, prefix);
    // The faults off, then one more incremental of each tenant: its last changes are in the service.
    bench.sim.setFaults({ error5xxRate: 0, rate429: 0, resetRate: 0, dropAfterCommitRate: 0 });
    const queue = new Queue(QUEUES.sync, { connection: bench.admin, prefix: queuePrefix(prefix, QUEUES.sync), defaultJobOptions: DEFAULT_JOB_OPTIONS });
    queue.on('error', () => undefined);
    const stores = createStateStores(bench.admin, prefix);
    try {
      await Promise.all(
        ids.map(async (id) => {
          const { requestedAt } = await requestSync(queue, id, 'incremental', { trigger: 'cli' });
          await waitForRun(stores.runs, id, { mode: 'incremental', requestedAt, timeoutMs: 300_000, pollMs: 200 });
        }),
      );
    } finally {
      await queue.close();
    }
    await sleep(2_000);
    const succeeded = [...outcomes.values()].filter((o) => o === 'succeeded').length;
    const other = outcomes.size - succeeded;
    let contacts = 0;
    let invoices = 0;
    let duplicates = 0;
    let missing = 0;
    let stale = 0;
    for (const id of ids) {
      const d = bench.sim.data(clientIdOf(id));
      const want = new Map((await readFile(join(data.get(id)!.folder, 'contacts.ndjson'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; name: string }).map((c) => [c.id, c.name]));
      const ext = d.contacts.map((c) => c.extPlatformId);
      contacts += d.contacts.length;
      invoices += d.invoices.length;
      duplicates += ext.length - new Set(ext).size + (d.invoices.length - new Set(d.invoices.map((i) => i.extPlatformId)).size);
      missing += [...want.keys()].filter((k) => !ext.includes(k)).length + Math.max(0, data.get(id)!.pushableInvoices - new Set(d.invoices.map((i) => i.extPlatformId)).size);
      stale += d.contacts.filter((c) => typeof c.extPlatformId === 'string' && want.has(c.extPlatformId) && want.get(c.extPlatformId) !== c.name).length;
    }
    const window = Math.max(1, Math.floor(samples.length / 10));
    const mid = Math.floor(samples.length / 2);
    const around = samples.slice(Math.max(0, mid - Math.floor(window / 2)), mid - Math.floor(window / 2) + window);
    const last = samples.slice(-window);
    const growth = (pick: (s: SoakSample) => number): number => {
      const a = median(around.map(pick));
      return a === 0 ? 0 : round(((median(last.map(pick)) - a) / a) * 100);
    };
    await releaseBookkeeping(bench.admin);
    const result: SoakResult = {
      config: cfg,
      samples,
      secondHalfGrowthPct: { steadyRss: growth((s) => s.steadyRssMb), steadyHeap: growth((s) => s.steadyHeapMb), redis: growth((s) => s.redisMb) },
      redisKbByKind: { half, end },
      runs: { succeeded, other },
      kills,
      changes,
      webhooksReceived,
      tokensIssued: bench.sim.counters().tokensIssuedTotal - tokens0,
      landed: { contacts, invoices, duplicates, missing, stale },
    };
    bench.log(
      `  ${cfg.minutes} min: second half growth: steady worker RSS ${result.secondHalfGrowthPct.steadyRss}%, live heap ${result.secondHalfGrowthPct.steadyHeap}%, Redis ${result.secondHalfGrowthPct.redis}%; ` +
        `${succeeded} runs succeeded, ${other} other; ${kills} kills, ${changes} changes, ${webhooksReceived} webhooks, ${result.tokensIssued} tokens; ` +
        `landed ${contacts} contacts, ${invoices} invoices: ${duplicates} duplicates, ${missing} missing, ${stale} stale`,
    );
    bench.log(`  Redis by kind, KB (half -> end): ${Object.keys({ ...half, ...end }).map((k) => `${k} ${half[k] ?? 0} -> ${end[k] ?? 0}`).join(', ')}`);
    return result;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
    bench.sim.setTokenLifetime(300_000);
  }
}
