/**
 * Where schedulers are put in place: at start and on a tenants-file change, by every process of the fleet. The
 * tenants' sync ticks, the clients' token refreshes (through auth) and the fleet's housekeeping scheduler; each job's
 * schedulers in shards under locks of their own (src/queues/schedulers.ts), so processes starting together share the
 * writing instead of one writing it all while the others wait.
 */
import type { App } from '../app.js';
import type { TenantConfig } from '../config/tenants.js';
import { ensureHousekeepingSchedule, ensureTickSchedules, HOUSEKEEPING_EVERY_MS } from '../queues/index.js';

/** Puts the schedulers of `tenants` in place: false when a shard was held by another process throughout (it was doing so). */
export type ApplySchedules = (tenants: readonly TenantConfig[]) => Promise<boolean>;

/** Puts the schedulers of `tenants` in place; `housekeepingEveryMs`: the fleet's housekeeping interval (tests). */
export function schedulesOf(app: App, housekeepingEveryMs = HOUSEKEEPING_EVERY_MS): ApplySchedules {
  return async (tenants) => {
    const ticks = await ensureTickSchedules(app.queues.schedule, tenants, app.logger);
    const refresh = await app.auth.applyTenants(tenants);
    const housekeeping = await ensureHousekeepingSchedule(app.queues.schedule, housekeepingEveryMs, app.logger);
    return [ticks, refresh, housekeeping].every((r) => r.busy === undefined);
  };
}
