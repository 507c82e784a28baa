/**
 * `npm run demo`: the product end to end on a fresh machine with no configuration. A private Redis (or
 * REDIS_URL), the simulator on a random port, the bundled sample as a `file` tenant in a temp folder, an
 * in-process worker; a full sync, some changes, an incremental sync; then a summary. Everything it starts it
 * stops, also when aborted (SIGINT), and on a shared REDIS_URL it removes its keys (a prefix of its own).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createApp, type App } from '../app.js';
import { loadEnv } from '../config/env.js';
import { parseTenants } from '../config/tenants.js';
import { createLogger, type Logger } from '../logger.js';
import { createMetrics, type Metrics } from '../ops/metrics.js';
import { requestSync } from '../queues/index.js';
import { prefixPattern } from '../redis/keys.js';
import { startSimulator, type Simulator, type SimulatorCounters } from '../simulator/index.js';
import { waitForRun, type RunRecord } from '../state/index.js';
import { startWorker, type RunningWorker } from '../worker.js';
import { demoRedis, type DemoRedis } from './redis.js';
import { changeSample, demoSample, writeDemoSample } from './sample.js';

export const DEMO_TENANT = 'demo';
export const DEMO_CLIENT_ID = 'demo-client';
const TOKEN_ROUTE = 'POST /auth/v1/api-key/auth';

export interface DemoProgress {
  update(run: RunRecord): void;
  stop(): void;
}

export interface DemoOptions {
  /** Reuse this Redis (keys under a prefix of the demo's own, removed at the end); else spawn one. */
  redisUrl?: string | undefined;
  /** Customers in the sample (default 300). */
  contacts?: number;
  /** Default: warnings and errors as JSON on stderr. */
  logger?: Logger;
  /** A progress display per run (the CLI passes a bar or plain lines). */
  progress?: (label: string) => DemoProgress | undefined;
  /** One line per step, for people. */
  step?: (line: string) => void;
  signal?: AbortSignal;
}

export interface DemoRunSummary {
  mode: 'full' | 'incremental';
  runId: string;
  outcome: string;
  seconds: number;
  created: number;
  updated: number;
  skipped: number;
  /** Dead-lettered by the service or the mapper, plus bad records (lines that are not good records). */
  deadLettered: number;
  /** Invoices still waiting for their contact, and payments the service has no id for. */
  pending: number;
  unlinked: number;
  counts: Record<string, number>;
  /** API requests the simulator answered during the run (the token endpoint not counted). */
  requests: number;
  tokensIssued: number;
  writes: number;
}

export interface DemoSummary {
  tenant: string;
  redis: 'spawned' | 'given';
  /** The private redis-server's address (spawned only; stopped when the demo ends). */
  redisUrl?: string;
  /** The temp folder of the sample (removed when the demo ends). */
  dataFolder: string;
  sample: { contacts: number; invoices: number; payments: number; badLines: number };
  changes: { renamed: number; paid: number; payments: number };
  runs: DemoRunSummary[];
  /** What the simulator counted over the whole demo. */
  simulator: {
    requests: number;
    requestsByRoute: Record<string, Record<string, number>>;
    tokensIssued: number;
    writesCommitted: number;
    unauthorized: SimulatorCounters['unauthorized'];
    supersededInFlight: number;
    contacts: number;
    invoices: number;
  };
  /** What the worker's own metrics counted (they should agree with the simulator). */
  client: { requests: number; rotations: number };
  deadLetters: { entity: string; where: string; reason: string }[];
  /** Contacts stored with `hasErrors` (a field left out), by platform id. */
  flagged: { id: string; errorDetail: string }[];
  seconds: number;
}

function apiRequests(c: SimulatorCounters): number {
  let n = 0;
  for (const [route, byStatus] of Object.entries(c.requests)) {
    if (route === TOKEN_ROUTE) continue;
    for (const v of Object.values(byStatus)) n += v;
  }
  return n;
}

async function counterTotal(counter: Metrics['httpRequests'] | Metrics['rotations']): Promise<number> {
  return (await counter.get()).values.reduce((n, v) => n + v.value, 0);
}

async function dropKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  try {
    const stream = client.scanStream({ match: prefixPattern(prefix), count: 500 });
    for await (const keys of stream as AsyncIterable<string[]>) if (keys.length > 0) await client.unlink(...keys);
  } finally {
    client.disconnect();
  }
}

const sum = (counts: Record<string, number>, ...keys: string[]): number => keys.reduce((n, k) => n + (counts[k] ?? 0), 0);

async function syncOnce(app: App, sim: Simulator, mode: 'full' | 'incremental', options: DemoOptions): Promise<DemoRunSummary> {
  const before = sim.counters();
  const progress = options.progress?.(`${mode === 'full' ? 'full sync' : 'incremental sync'}`);
  let run: RunRecord;
  try {
    const { requestedAt } = await requestSync(app.queues.sync, DEMO_TENANT, mode, { trigger: 'cli' });
    run = await waitForRun(app.stores.runs, DEMO_TENANT, {
      mode,
      requestedAt,
      timeoutMs: 5 * 60_000,
      pollMs: 100,
      onProgress: (r) => progress?.update(r),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    progress?.update(run);
  } finally {
    progress?.stop();
  }
  const after = sim.counters();
  const c = run.counts;
  return {
    mode,
    runId: run.runId,
    outcome: run.outcome ?? 'unknown',
    seconds: ((run.finishedAt ?? Date.now()) - run.startedAt) / 1000,
    created: sum(c, 'created'),
    updated: sum(c, 'updated'),
    skipped: sum(c, 'skipped'),
    deadLettered: sum(c, 'deadLettered', 'badRecords'),
    pending: Math.max(0, sum(c, 'pending') - sum(c, 'invoices.deadLettered')),
    unlinked: sum(c, 'unlinked'),
    counts: c,
    requests: apiRequests(after) - apiRequests(before),
    tokensIssued: after.tokensIssuedTotal - before.tokensIssuedTotal,
    writes: after.writesCommitted - before.writesCommitted,
  };
}

/** Runs the demo and returns its summary; throws on the first failure after stopping everything it started. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoSummary> {
  const started = Date.now();
  const step = options.step ?? (() => undefined);
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const contacts = options.contacts ?? 300;
  const prefix = `{cs-demo-${randomBytes(4).toString('hex')}}`;
  const cleanups: (() => Promise<unknown>)[] = [];
  const signal = options.signal;
  const checkAbort = (): void => signal?.throwIfAborted();

  try {
    const redis: DemoRedis = await demoRedis({ url: options.redisUrl });
    cleanups.push(() => redis.stop());
    if (redis.kind === 'given') cleanups.push(() => dropKeys(redis.url, prefix));
    step(redis.kind === 'spawned' ? `started a private redis-server at ${redis.url}` : `using REDIS_URL (keys under ${prefix}, removed at the end)`);
    checkAbort();

    const folder = await mkdtemp(join(tmpdir(), 'collections-sync-demo-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const sample = demoSample({ contacts });
    await writeDemoSample(folder, sample);
    step(
      `wrote the sample: ${sample.contacts.length} customers, ${sample.invoices.length} invoices, ${sample.payments.length} payments, ` +
        `and ${sample.bad.length} bad lines (${folder})`,
    );

    const clientSecret = randomBytes(24).toString('base64url');
    const sim = await startSimulator({ clients: [{ clientId: DEMO_CLIENT_ID, clientSecret }], port: 0 });
    cleanups.push(() => sim.close());
    step(`started the collections-service simulator at ${sim.baseUrl}`);
    checkAbort();

    const env = loadEnv({
      REDIS_URL: redis.url,
      KEY_PREFIX: prefix,
      COLLECTIONS_BASE_URL: sim.baseUrl,
      COLLECTIONS_AUTH_URL: sim.authUrl,
      // Invoices whose contact is in no file are dead-lettered at once, so the demo shows them.
      PENDING_MAX_WAIT_S: '0',
      SHUTDOWN_TIMEOUT_MS: '5000',
    });
    const tenants = parseTenants(
      JSON.stringify({ tenants: [{ id: DEMO_TENANT, collections: { clientId: DEMO_CLIENT_ID, clientSecret }, platform: { kind: 'file', path: folder } }] }),
      {},
      'demo tenants',
    );
    const metrics = createMetrics({ defaultMetrics: false });
    const app = await createApp({ env, tenants, logger, role: 'worker', metrics });
    cleanups.push(() => app.close());
    const worker: RunningWorker = await startWorker(app, { opsPort: 0, schedules: false });
    cleanups.push(() => worker.close(5_000));
    step('started a worker in this process');
    checkAbort();

    const full = await syncOnce(app, sim, 'full', options);
    step(`full sync: ${full.outcome} in ${full.seconds.toFixed(1)} s`);
    checkAbort();

    const changes = changeSample(sample, new Date());
    await writeDemoSample(folder, sample);
    step(`changed the sample: ${changes.renamed.length} customers renamed, ${changes.paid.length} invoices paid`);
    const incremental = await syncOnce(app, sim, 'incremental', options);
    step(`incremental sync: ${incremental.outcome} in ${incremental.seconds.toFixed(1)} s`);

    const counters = sim.counters();
    const stored = sim.data(DEMO_CLIENT_ID);
    const entries = await app.stores.deadLetters.list(DEMO_TENANT, { limit: 20 });
    return {
      tenant: DEMO_TENANT,
      redis: redis.kind,
      ...(redis.kind === 'spawned' ? { redisUrl: redis.url } : {}),
      dataFolder: folder,
      sample: { contacts: sample.contacts.length, invoices: sample.invoices.length, payments: sample.payments.length - changes.payments.length, badLines: sample.bad.length },
      changes: { renamed: changes.renamed.length, paid: changes.paid.length, payments: changes.payments.length },
      runs: [full, incremental],
      simulator: {
        requests: apiRequests(counters),
        requestsByRoute: counters.requests,
        tokensIssued: counters.tokensIssuedTotal,
        writesCommitted: counters.writesCommitted,
        unauthorized: counters.unauthorized,
        supersededInFlight: counters.supersededInFlight,
        contacts: stored.contacts.length,
        invoices: stored.invoices.length,
      },
      client: { requests: await counterTotal(metrics.httpRequests), rotations: await counterTotal(metrics.rotations) },
      deadLetters: entries.map((e) => ({ entity: e.entity, where: [e.place, e.platformId].filter((x) => x !== undefined).join(' ') || '?', reason: e.reason })),
      flagged: stored.contacts
        .filter((c) => c.hasErrors === true)
        .map((c) => ({ id: c.extPlatformId ?? c.uuid, errorDetail: JSON.stringify(c.errorDetail ?? {}) })),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    // Reverse order: worker, app, simulator, data folder, keys, Redis.
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'demo: cleanup step failed'));
    }
  }
}
