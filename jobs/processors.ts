/**
 * The processor of each queue, built from the app's parts. The worker's composition root (src/worker.ts) takes
 * them from here: the one import of jobs/ that src/ may make (eslint.config.js), so the rest of src/ never
 * depends on what a job does. Each is built only when the worker works its queue.
 */
import type { Processor } from 'bullmq';
import type { App } from '../src/app.js';
import { CampaignStore } from '../src/calls/index.js';
import type { Env } from '../src/config/env.js';
import { parseNetworks } from '../src/config/networks.js';
import { authUrlOf, notifyTargetOf } from '../src/config/tenants.js';
import { AddressGuard } from '../src/notify/index.js';
import type { TenantConfig } from '../src/config/tenants.js';
import { byJobName, type QUEUES } from '../src/queues/index.js';
import { packageVersion } from '../src/version.js';
import { createCallsProcessor } from './calls/processor.js';
import { createHousekeepingProcessor } from './housekeeping.js';
import { purgeRemovedTenants } from '../src/state/purge.js';
import { createNotifyProcessor } from './notify.js';
import { createRefreshTokenProcessor } from './refresh-token.js';
import { createTickProcessor } from './schedule-tick.js';
import { createSyncProcessor, type SyncProcessorDeps } from './sync/processor.js';

export type QueueProcessors = Record<keyof typeof QUEUES, () => Processor>;

/** A sync run's settings, from the environment. */
function syncSettingsOf(env: Env): SyncProcessorDeps['settings'] {
  return {
    pageSize: env.SYNC_PAGE_SIZE,
    lookbackMs: env.CURSOR_LOOKBACK_S * 1000,
    pendingMaxWaitMs: env.PENDING_MAX_WAIT_S * 1000,
    ambiguousRecheckMs: 500,
    syncConcurrency: env.SYNC_CONCURRENCY,
    inFlightLimit: env.TENANT_INFLIGHT_LIMIT,
    runLockTtlMs: env.JOB_LOCK_MS,
    runsKept: env.RUNS_KEPT,
    runsDetailed: env.RUNS_DETAILED,
    runsMaxAgeMs: env.RUNS_MAX_AGE_DAYS * 86_400_000,
    stallMs: env.RUN_STALL_S * 1000,
  };
}

/**
 * Holds the job's tenant while it runs (App.hold): a tenant idle for TENANT_IDLE_S has its client, adapter and token
 * provider dropped, never while one of its jobs uses them.
 */
function holding(app: App, processor: Processor): Processor {
  return async (job, token, signal) => {
    const tenantId = (job.data as { tenantId?: unknown } | undefined)?.tenantId;
    const release = typeof tenantId === 'string' ? app.hold(tenantId) : undefined;
    try {
      return (await processor(job, token, signal)) as unknown;
    } finally {
      release?.();
    }
  };
}

/** The schedule queue holds two jobs: the tenants' schedule ticks and the fleet's housekeeping passes. */
function createScheduleProcessor(app: App): Processor {
  const { env, logger } = app;
  return byJobName<unknown>(
    createTickProcessor({ syncQueue: app.queues.sync, knows: (id) => app.tenant(id) !== undefined, logger }),
    createHousekeepingProcessor({
      tenantIds: () => app.tenants().map((t) => t.id),
      deadLetters: app.stores.deadLetters,
      campaigns: new CampaignStore(app.redis, env.KEY_PREFIX, { retentionMs: env.CAMPAIGN_RETENTION_DAYS * 86_400_000 }),
      webhookEvents: app.webhookEvents,
      deadLetterMaxAgeMs: env.DEAD_LETTER_MAX_AGE_DAYS * 86_400_000,
      ...(env.TENANT_STATE_RETENTION_DAYS > 0 ? { purgeRemovedTenants: () => purgeRemovedTenants(app, Date.now() - env.TENANT_STATE_RETENTION_DAYS * 86_400_000) } : {}),
      redisDown: () => app.outage.down,
      logger,
    }),
  );
}

export function createProcessors(app: App, shutdown: AbortSignal): QueueProcessors {
  const { env, logger, metrics } = app;
  // What the sync and the calls both read: the tenants in force, their clients, the record mirror.
  const tenants = { logger, mirror: app.mirror, tenant: (id: string) => app.tenant(id), clientFor: (t: TenantConfig) => app.clientFor(t) };
  return {
    sync: () =>
      holding(app, createSyncProcessor({
        ...tenants,
        stores: app.stores,
        flags: app.flags,
        adapterFor: (t) => app.adapterFor(t),
        settings: syncSettingsOf(env),
        shutdown,
        redisDown: () => app.outage.down,
        notify: app.notify,
        ...(metrics
          ? {
              metrics: {
                record: (tenant, entity, outcome, n = 1) => metrics.records.inc({ tenant, entity, outcome }, n),
                run: (tenant, outcome, seconds) => {
                  metrics.runs.inc({ tenant, outcome });
                  metrics.runSeconds.observe({ tenant }, seconds);
                },
                stalled: (tenant) => metrics.runStalls.inc({ tenant }),
                progressAt: (tenant, at) => (at === undefined ? metrics.runProgressTimestamp.remove({ tenant }) : metrics.runProgressTimestamp.set({ tenant }, at / 1000)),
              },
            }
          : {}),
      })),
    schedule: () => createScheduleProcessor(app),
    notify: () =>
      createNotifyProcessor({
        // A tenant gone (its tenant.deleted) has the fleet's receiver only.
        targetOf: (id) => notifyTargetOf(env, app.tenant(id)),
        events: app.events,
        guard: new AddressGuard(parseNetworks(env.OUTBOUND_ALLOWED_NETWORKS ?? '').networks),
        deliveries: app.stores.deliveries,
        timeoutMs: env.NOTIFY_TIMEOUT_MS,
        shutdown,
        lockTtlMs: env.JOB_LOCK_MS,
        userAgent: `collections-sync/${packageVersion()}`,
        logger,
        ...(metrics
          ? {
              metrics: {
                delivery: (tenant, type, outcome, seconds) => {
                  metrics.notifyDeliveries.inc({ tenant, type, outcome });
                  metrics.notifyDeliverySeconds.observe({ type }, seconds);
                },
              },
            }
          : {}),
      }),
    refreshToken: () =>
      createRefreshTokenProcessor({
        refresher: app.auth.refresher,
        resolveCredentials: (tenantId) => {
          const t = app.tenant(tenantId);
          return t ? { clientId: t.collections.clientId, clientSecret: t.collections.clientSecret, authUrl: authUrlOf(env, t) } : undefined;
        },
        logger,
      }),
    calls: () =>
      holding(app, createCallsProcessor({
        ...tenants,
        redis: app.redis,
        prefix: env.KEY_PREFIX,
        cooldownMs: env.CALL_COOLDOWN_HOURS * 3_600_000,
        retentionMs: env.CAMPAIGN_RETENTION_DAYS * 86_400_000,
        lockTtlMs: env.JOB_LOCK_MS,
        shutdown,
        webhookEvents: app.webhookEvents,
        ...(metrics ? { countWebhookEvent: (tenant: string, outcome: string) => metrics.webhookEvents.inc({ tenant, outcome }) } : {}),
        ...(metrics
          ? {
              metrics: {
                request: (tenant, outcome, numbersPlaced) => {
                  metrics.callRequests.inc({ tenant, outcome });
                  if (numbersPlaced > 0) metrics.callNumbersPlaced.inc({ tenant }, numbersPlaced);
                },
              },
            }
          : {}),
      })),
  };
}
