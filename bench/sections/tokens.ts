/**
 * The token protocol's cost: requests per second through the Redis gate (a lease taken and released around
 * every request) against the same requests with a fixed token, same concurrency, alternating in the same run;
 * then tokens issued over a sustained period with short-lived tokens against the minimum the lifetime allows.
 * In this process: the App's own collections client (the gate) and the refresh-token worker.
 */
import { Agent } from 'undici';
import { createApp, type App } from '../../src/app.js';
import { CollectionsClient } from '../../src/collections/client.js';
import { FixedTokenProvider } from '../../src/collections/static-token-provider.js';
import { requestToken } from '../../src/collections/token.js';
import { loadEnv } from '../../src/config/env.js';
import { Secret } from '../../src/secret.js';
import { parseTenants } from '../../src/config/tenants.js';
import { createLogger } from '../../src/logger.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { clientIdOf, type Bench } from '../harness.js';

export interface TokenConfig {
  concurrency: number;
  latenciesMs: number[];
  /** One arm's duration; arms alternate gate, fixed, gate, fixed, ... */
  armMs: number;
  rounds: number;
  lifetimeMs: number;
  sustainedMs: number;
}

export interface GateCostRow {
  latencyMs: number;
  gatePerS: number;
  fixedPerS: number;
  /** gatePerS / fixedPerS: 1.0 means the protocol costs nothing. */
  ratio: number;
  /** concurrency / latency (none at 0 ms). */
  idealPerS: number | null;
  failed: number;
}

export interface TokenResult {
  config: TokenConfig;
  gateCost: GateCostRow[];
  sustained: {
    durationMs: number;
    requests: number;
    failed: number;
    tokensIssued: number;
    /** ceil(duration / lifetime): a token serves at most its lifetime. */
    minimum: number;
    /**
     * What proactive rotation costs by design: a token is replaced when TOKEN_REFRESH_MARGIN of its life is
     * left, so one per lifetime x (1 - margin), plus the first: ceil(duration / (lifetime x (1 - margin))) + 1.
     */
    expectedWithMargin: number;
    issuedPerMinimum: number;
    unauthorized: number;
    supersededInFlight: number;
  };
}

const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

async function hammer(client: CollectionsClient, concurrency: number, ms: number): Promise<{ ok: number; failed: number; ms: number }> {
  let ok = 0;
  let failed = 0;
  const t0 = performance.now();
  const until = t0 + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        try {
          await client.listContacts({ size: 1 });
          ok += 1;
        } catch {
          failed += 1;
        }
      }
    }),
  );
  return { ok, failed, ms: performance.now() - t0 };
}

async function openApp(bench: Bench, cfg: TokenConfig, tenants: string[]): Promise<{ app: App; worker: RunningWorker }> {
  const env = loadEnv({
    REDIS_URL: bench.redis.url,
    KEY_PREFIX: '{bench-tokens}',
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    LOG_LEVEL: 'warn',
    TOKEN_LIFETIME_S: String(Math.ceil(cfg.lifetimeMs / 1000)),
    TENANT_INFLIGHT_LIMIT: String(Math.max(32, cfg.concurrency)),
    HTTP_REQUEST_TIMEOUT_MS: '10000',
  });
  for (const t of tenants) bench.sim.setClient(clientIdOf(t), `secret-${t}`);
  const file = parseTenants(
    JSON.stringify({ tenants: tenants.map((t) => ({ id: t, collections: { clientId: clientIdOf(t), clientSecret: `secret-${t}` }, platform: { kind: 'memory' } })) }),
    {},
  );
  const app = await createApp({ env, tenants: file, logger: createLogger({ level: 'warn' }), role: 'worker' });
  const worker = await startWorker(app, { queues: ['refreshToken'], schedules: false, opsPort: 0 });
  return { app, worker };
}

export async function runTokenSection(bench: Bench, cfg: TokenConfig): Promise<TokenResult> {
  const { app, worker } = await openApp(bench, cfg, ['tok-gate', 'tok-life']);
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  try {
    const gateTenant = app.tenant('tok-gate')!;
    const gate = app.clientFor(gateTenant);
    // The fixed arm has a client of its own, so its token never supersedes the gate's.
    bench.sim.setClient('client-tok-fixed', 'secret-tok-fixed');
    const fixedToken = await requestToken({ authUrl: bench.sim.authUrl, clientId: 'client-tok-fixed', clientSecret: new Secret('secret-tok-fixed') });
    const fixed = new CollectionsClient({ baseUrl: bench.sim.baseUrl, tokens: new FixedTokenProvider(fixedToken.accessToken), dispatcher: agent });

    const gateCost: GateCostRow[] = [];
    for (const latencyMs of cfg.latenciesMs) {
      bench.sim.setFaults({ latencyMs, jitterMs: 0, rateLimitPerSecond: null });
      await hammer(gate, cfg.concurrency, 300); // warm-up: token, connections, scripts
      await hammer(fixed, cfg.concurrency, 300);
      const sum = { gate: { ok: 0, ms: 0, failed: 0 }, fixed: { ok: 0, ms: 0, failed: 0 } };
      for (let r = 0; r < cfg.rounds; r += 1) {
        for (const [arm, client] of [['gate', gate], ['fixed', fixed]] as const) {
          const h = await hammer(client, cfg.concurrency, cfg.armMs);
          sum[arm].ok += h.ok;
          sum[arm].ms += h.ms;
          sum[arm].failed += h.failed;
        }
      }
      const gatePerS = sum.gate.ok / (sum.gate.ms / 1000);
      const fixedPerS = sum.fixed.ok / (sum.fixed.ms / 1000);
      gateCost.push({
        latencyMs,
        gatePerS: round(gatePerS, 1),
        fixedPerS: round(fixedPerS, 1),
        ratio: round(gatePerS / fixedPerS),
        idealPerS: latencyMs > 0 ? (cfg.concurrency * 1000) / latencyMs : null,
        failed: sum.gate.failed + sum.fixed.failed,
      });
      bench.log(`  latency ${latencyMs} ms: gate ${Math.round(gatePerS)} req/s, fixed token ${Math.round(fixedPerS)} req/s (ratio ${round(gatePerS / fixedPerS)})`);
    }

    // Sustained requests with short-lived tokens, rotated ahead of expiry by the scheduled refresher.
    bench.sim.setFaults({ latencyMs: cfg.latenciesMs.at(-1) ?? 20, jitterMs: 0 });
    bench.sim.setTokenLifetime(cfg.lifetimeMs);
    const lifeTenant = app.tenant('tok-life')!;
    const life = app.clientFor(lifeTenant);
    await app.auth.ensureSchedules([lifeTenant]);
    const before = bench.sim.counters();
    const h = await hammer(life, cfg.concurrency, cfg.sustainedMs);
    const after = bench.sim.counters();
    bench.sim.setTokenLifetime(300_000);
    const issued = (after.tokensIssued[clientIdOf('tok-life')] ?? 0) - (before.tokensIssued[clientIdOf('tok-life')] ?? 0);
    const minimum = Math.ceil(h.ms / cfg.lifetimeMs);
    const expectedWithMargin = Math.ceil(h.ms / (cfg.lifetimeMs * (1 - app.env.TOKEN_REFRESH_MARGIN))) + 1;
    const unauthorized = Object.values(after.unauthorized).reduce((a, b) => a + b, 0) - Object.values(before.unauthorized).reduce((a, b) => a + b, 0);
    const sustained = {
      durationMs: Math.round(h.ms),
      requests: h.ok,
      failed: h.failed,
      tokensIssued: issued,
      minimum,
      expectedWithMargin,
      issuedPerMinimum: round(issued / minimum, 2),
      unauthorized,
      supersededInFlight: after.supersededInFlight - before.supersededInFlight,
    };
    bench.log(`  ${Math.round(h.ms / 1000)} s at ${cfg.lifetimeMs / 1000} s tokens: ${issued} tokens issued (minimum ${minimum}, ${expectedWithMargin} when renewed ahead of expiry), ${h.failed} failed, ${unauthorized} 401s`);
    await fixed.close();
    return { config: cfg, gateCost, sustained };
  } finally {
    await worker.close(10_000);
    await app.close();
    await agent.close();
  }
}
