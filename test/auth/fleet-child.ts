/**
 * A worker process for the auth tests (run with `node --import tsx test/auth/fleet-child.ts`; config as JSON in
 * AUTH_CHILD_CONFIG). It builds its own Redis connections, a refresh-token Worker running the real processor,
 * and a CollectionsClient on the Redis-backed provider; hammers the simulator with `concurrency` loops from
 * `startAt` for `durationMs`; then prints one JSON summary line on stdout. With `pauseBeforeTokenCall` its
 * refresher announces `{"event":"paused"}` with the gate closed and hangs there (the parent SIGKILLs it).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { z } from 'zod';
import type { AuthMetrics } from '../../src/auth/index.js';
import { CollectionsClient } from '../../src/collections/client.js';
import { jwtExpiryMs } from '../../src/collections/token.js';
import type { TokenLease, TokenProvider } from '../../src/collections/token-provider.js';
import { Secret } from '../../src/secret.js';
import { buildRig, quietLogger, sleep } from './harness.js';

const configSchema = z.object({
  redisUrl: z.string(),
  /** REDIS_CLUSTER_NODES: run on this Redis Cluster (redisUrl lends only its credentials). */
  clusterNodes: z.string().optional(),
  prefix: z.string(),
  authUrl: z.string(),
  baseUrl: z.string(),
  tenants: z.array(z.object({ id: z.string(), clientId: z.string(), secret: z.string() })),
  tenantId: z.string(),
  settings: z.record(z.string(), z.number()),
  /** When to start hammering (ms since epoch); 0 = on the first line on stdin. */
  startAt: z.number(),
  durationMs: z.number(),
  concurrency: z.number().int().min(0),
  runWorker: z.boolean(),
  worker: z.object({ lockDuration: z.number().optional(), stalledInterval: z.number().optional() }).default({}),
  pauseBeforeTokenCall: z.boolean().default(false),
});

export type ChildConfig = z.input<typeof configSchema>;

export interface ChildSummary {
  event: 'summary';
  pid: number;
  ok: number;
  failed: number;
  errors: Record<string, number>;
  startedAt: number;
  endedAt: number;
  gateWaits: number;
  gateWaitMaxMs: number;
  gateWaitTotalMs: number;
  unauthorized: Record<string, number>;
  rotations: Record<string, number>;
  /** Longest time between two successful requests of this process (a stall shows here). */
  maxGapMs: number;
  /** Client-side durations of successful calls (acquire + send + release), ms. */
  p50Ms: number;
  p99Ms: number;
  /** This process's event-loop delay while it hammered (perf_hooks.monitorEventLoopDelay), ms. */
  loopDelayMaxMs: number;
  loopDelayP99Ms: number;
  /** Leases answered 401 `expired` (each reported to the provider, then retried by the client). */
  expired: number;
  /**
   * Each of them (up to 100): the token's life left when `acquire()` was called (the lease was taken at that
   * moment or later, so it had at most this much left) and how long after that call the 401 came back; both on
   * this machine's clock, the token's expiry from its `exp`.
   */
  expiredLeases: { leftAtAcquireMs: number; answeredAfterMs: number }[];
}

/**
 * The provider as the client uses it, watched: when each lease was taken and on which token, so a 401 `expired`
 * can be told apart (leased too close to the expiry, or a request that took longer than the token had left).
 */
function watched(inner: TokenProvider, summary: ChildSummary): TokenProvider {
  const askedAt = new WeakMap<TokenLease, number>();
  return {
    async acquire(signal) {
      const at = Date.now();
      const lease = await inner.acquire(signal);
      askedAt.set(lease, at);
      return lease;
    },
    async rejected(lease, reason, signal) {
      if (reason === 'expired') {
        summary.expired += 1;
        const at = askedAt.get(lease);
        const exp = jwtExpiryMs(lease.token);
        if (at !== undefined && exp !== undefined && summary.expiredLeases.length < 100) {
          summary.expiredLeases.push({ leftAtAcquireMs: exp - at, answeredAfterMs: Date.now() - at });
        }
      }
      return inner.rejected(lease, reason, signal);
    },
  };
}

const emit = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const bump = (m: Record<string, number>, k: string): void => void (m[k] = (m[k] ?? 0) + 1);

async function main(): Promise<void> {
  const cfg = configSchema.parse(JSON.parse(process.env['AUTH_CHILD_CONFIG'] ?? '{}'));
  const logger = quietLogger();
  const summary: ChildSummary = {
    event: 'summary', pid: process.pid, ok: 0, failed: 0, errors: {}, startedAt: 0, endedAt: 0,
    gateWaits: 0, gateWaitMaxMs: 0, gateWaitTotalMs: 0, unauthorized: {}, rotations: {}, maxGapMs: 0, p50Ms: 0, p99Ms: 0,
    loopDelayMaxMs: 0, loopDelayP99Ms: 0, expired: 0, expiredLeases: [],
  };
  const metrics: AuthMetrics = {
    rotation: (_c, reason) => bump(summary.rotations, reason),
    unauthorized: (reason) => bump(summary.unauthorized, reason),
    gateWaitMs: (ms) => {
      summary.gateWaits += 1;
      summary.gateWaitTotalMs += ms;
      summary.gateWaitMaxMs = Math.max(summary.gateWaitMaxMs, ms);
    },
  };
  const byId = new Map(cfg.tenants.map((t) => [t.id, t]));
  const rig = await buildRig({
    url: cfg.redisUrl,
    ...(cfg.clusterNodes === undefined ? {} : { clusterNodes: cfg.clusterNodes }),
    prefix: cfg.prefix,
    authUrl: cfg.authUrl,
    settings: cfg.settings,
    logger,
    metrics,
    ...(cfg.runWorker
      ? {
          credentials: (id: string) => {
            const t = byId.get(id);
            return t && { clientId: t.clientId, clientSecret: new Secret(t.secret), authUrl: cfg.authUrl };
          },
          worker: {
            ...(cfg.worker.lockDuration === undefined ? {} : { lockDuration: cfg.worker.lockDuration }),
            ...(cfg.worker.stalledInterval === undefined ? {} : { stalledInterval: cfg.worker.stalledInterval }),
          },
        }
      : {}),
    ...(cfg.pauseBeforeTokenCall
      ? {
          hooks: {
            beforeTokenCall: async (clientKey: string) => {
              emit({ event: 'paused', clientKey, at: Date.now() });
              await new Promise<never>(() => undefined);
            },
          },
        }
      : {}),
  });
  const t = byId.get(cfg.tenantId);
  if (!t) throw new Error(`no tenant ${cfg.tenantId}`);
  const client = new CollectionsClient({
    baseUrl: cfg.baseUrl,
    tokens: watched(rig.auth.providerFor({ id: t.id, collections: { clientId: t.clientId, clientSecret: new Secret(t.secret) } }), summary),
    retries: 3,
    backoff: { baseMs: 20, maxMs: 200 },
  });
  emit({ event: 'ready', pid: process.pid });

  if (cfg.concurrency > 0) {
    if (cfg.startAt === 0) await goSignal();
    else await sleep(Math.max(0, cfg.startAt - Date.now()));
    const contact = await client.createContact({ name: `fleet-${process.pid}`, extPlatformId: `fleet-${process.pid}` });
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    summary.startedAt = Date.now();
    const until = summary.startedAt + cfg.durationMs;
    let lastOk = summary.startedAt;
    const durations: number[] = [];
    let n = 0;
    await Promise.all(
      Array.from({ length: cfg.concurrency }, async () => {
        while (Date.now() < until) {
          const k = n++;
          const t0 = performance.now();
          try {
            if (k % 3 === 2) {
              await client.upsertInvoice({
                number: `INV-${process.pid}-${k % 20}`, date: '2026-01-01', dueDate: '2026-02-01', total: 100 + (k % 20),
                contactUuid: contact.uuid, extPlatformId: `inv-${process.pid}-${k % 20}`,
              });
            } else {
              await client.listContacts({ size: 1 });
            }
            summary.ok += 1;
            durations.push(performance.now() - t0);
            const now = Date.now();
            summary.maxGapMs = Math.max(summary.maxGapMs, now - lastOk);
            lastOk = now;
          } catch (err) {
            summary.failed += 1;
            bump(summary.errors, (err as { code?: string }).code ?? (err as Error).name);
          }
        }
      }),
    );
    summary.endedAt = Date.now();
    loop.disable();
    summary.loopDelayMaxMs = Math.round(loop.max / 1e6);
    summary.loopDelayP99Ms = Math.round(loop.percentile(99) / 1e6);
    durations.sort((a, b) => a - b);
    summary.p50Ms = Math.round(durations[Math.floor(durations.length * 0.5)] ?? 0);
    summary.p99Ms = Math.round(durations[Math.floor(durations.length * 0.99)] ?? 0);
  } else {
    // A refresher-only process: keep its worker until told to stop (stdin closes) or killed.
    await new Promise<void>((resolve) => {
      process.stdin.on('end', resolve);
      process.stdin.on('close', resolve);
      process.stdin.resume();
    });
  }
  await client.close();
  await rig.close();
  emit(summary);
}

/** Resolves on the first line the parent writes to stdin ("go"). */
function goSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.stdin.once('data', () => {
      process.stdin.pause();
      resolve();
    });
  });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    emit({ event: 'error', message: err instanceof Error ? err.stack ?? err.message : String(err) });
    process.exit(1);
  },
);
