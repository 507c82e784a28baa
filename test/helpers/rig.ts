/**
 * An in-process rig for end-to-end tests: a Redis (from the caller), the simulator on port 0, an App with
 * its worker, tenants built from short specs. Real parts throughout; nothing of ours is mocked.
 */
import { Writable } from 'node:stream';
import { createApp, type App } from '../../src/app.js';
import { loadEnv, type Env } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/ops/metrics.js';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { startWorker, type RunningWorker, type WorkerOptions } from '../../src/worker.js';
import { requestSync, type SyncMode } from '../../src/queues/index.js';
import { waitForRun, type RunRecord } from '../../src/state/index.js';
import { testPrefix } from './redis.js';

export interface TenantSpec {
  id: string;
  platform: Record<string, unknown>;
  clientId?: string;
  clientSecret?: string;
  extra?: Record<string, unknown>;
}

export interface Rig {
  sim: Simulator;
  app: App;
  worker: RunningWorker | undefined;
  env: Env;
  logs: string[];
  metrics: Metrics;
  memory: MemoryPlatformRegistry;
  /** The environment a CLI child process needs to work on this rig's Redis, prefix and simulator. */
  cliEnv(tenantsFile: string): Record<string, string>;
  /** Requests a run and waits for it to finish. */
  sync(tenant: string, mode?: SyncMode, since?: string): Promise<RunRecord>;
  close(): Promise<void>;
}

export function tenantsJson(specs: TenantSpec[]): string {
  return JSON.stringify({
    tenants: specs.map((s) => ({
      id: s.id,
      collections: { clientId: s.clientId ?? `client-${s.id}`, clientSecret: s.clientSecret ?? `secret-${s.id}-x9` },
      platform: s.platform,
      ...s.extra,
    })),
  });
}

export async function startRig(options: {
  redisUrl: string;
  tenants: TenantSpec[];
  env?: Record<string, string>;
  simulator?: Partial<SimulatorOptions>;
  sim?: Simulator;
  worker?: WorkerOptions | false;
  memory?: MemoryPlatformRegistry;
  logLevel?: string;
}): Promise<Rig> {
  const sim =
    options.sim ??
    (await startSimulator({
      clients: options.tenants.map((t) => ({ clientId: t.clientId ?? `client-${t.id}`, clientSecret: t.clientSecret ?? `secret-${t.id}-x9` })),
      ...options.simulator,
    }));
  const env = loadEnv({
    REDIS_URL: options.redisUrl,
    KEY_PREFIX: testPrefix('rig'),
    COLLECTIONS_BASE_URL: sim.baseUrl,
    COLLECTIONS_AUTH_URL: sim.authUrl,
    LOG_LEVEL: options.logLevel ?? 'info',
    SYNC_CONCURRENCY: '16',
    HTTP_REQUEST_TIMEOUT_MS: '10000',
    HTTP_HEADERS_TIMEOUT_MS: '5000',
    HTTP_BODY_TIMEOUT_MS: '5000',
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger: Logger = createLogger({ level: env.LOG_LEVEL, destination: sink });
  const memory = options.memory ?? new MemoryPlatformRegistry();
  const metrics = createMetrics({ defaultMetrics: false });
  const app = await createApp({ env, tenants: parseTenants(tenantsJson(options.tenants), {}), logger, role: 'worker', memoryPlatforms: memory, metrics });
  const worker = options.worker === false ? undefined : await startWorker(app, { opsPort: 0, schedules: false, ...options.worker });
  return {
    sim,
    app,
    worker,
    env,
    logs,
    metrics,
    memory,
    cliEnv: (tenantsFile) => ({
      REDIS_URL: env.REDIS_URL,
      KEY_PREFIX: env.KEY_PREFIX,
      TENANTS_FILE: tenantsFile,
      COLLECTIONS_BASE_URL: env.COLLECTIONS_BASE_URL,
      COLLECTIONS_AUTH_URL: env.COLLECTIONS_AUTH_URL,
    }),
    async sync(tenant, mode = 'incremental', since) {
      const { requestedAt } = await requestSync(app.queues.sync, tenant, mode, { trigger: 'test', ...(since ? { since } : {}) });
      return waitForRun(app.stores.runs, tenant, { mode, requestedAt, timeoutMs: 120_000 });
    },
    async close() {
      await worker?.close(10_000);
      await app.close();
      if (!options.sim) await sim.close();
    },
  };
}
