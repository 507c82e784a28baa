/**
 * The one place schedulers are upserted (bullmq #2876, #3381: concurrent upserts made duplicates or stopped
 * schedulers): at start and on a tenants-file change, one process at a time under the schedules lock. The tenants'
 * sync ticks, the clients' token refreshes (through auth) and the fleet's housekeeping scheduler.
 */
import type { App } from '../app.js';
import type { TenantConfig } from '../config/tenants.js';
import { ensureHousekeepingSchedule, ensureTickSchedules, HOUSEKEEPING_EVERY_MS } from '../queues/index.js';
import { globalKey } from '../redis/keys.js';
import { RedisLock } from '../redis/lock.js';

const LOCK_TTL_MS = 30_000;
/** Another process holds the lock longer than this: it is putting the same schedulers in place, so this one skips. */
const LOCK_WAIT_MS = 10_000;

/** The lock under which one process at a time upserts schedulers. */
export function schedulesLockKey(prefix: string): string {
  return globalKey(prefix, 'lock', 'schedules');
}

/** Puts the schedulers of `tenants` in place: false when another process held the lock throughout (it was doing so). */
export type ApplySchedules = (tenants: readonly TenantConfig[]) => Promise<boolean>;

/** Puts the schedulers of `tenants` in place; `housekeepingEveryMs`: the fleet's housekeeping interval (tests). */
export function schedulesOf(app: App, housekeepingEveryMs = HOUSEKEEPING_EVERY_MS): ApplySchedules {
  return async (tenants) => {
    const lock = new RedisLock(app.redis, schedulesLockKey(app.env.KEY_PREFIX), LOCK_TTL_MS);
    if (!(await lock.acquireWithin(LOCK_WAIT_MS))) return false;
    try {
      await ensureTickSchedules(app.queues.schedule, tenants, app.logger);
      await app.auth.applyTenants(tenants);
      await ensureHousekeepingSchedule(app.queues.schedule, housekeepingEveryMs, app.logger);
      return true;
    } finally {
      await lock.release();
    }
  };
}
