/**
 * The watches of the tenants: the file's and the store's (tenants created over the API).
 *
 * A changed tenants file is applied all or nothing: it is checked whole, its schedules are put in place, and only
 * then do its tenants replace the running ones. Otherwise the previous tenants and schedules stay, and the log says so.
 *
 * The store is read every TENANT_STORE_POLL_MS (one Redis read when nothing changed). A stored tenant was checked
 * whole when it was written, so a change is taken at once (its client and adapter are made again when next needed),
 * then the schedules of every tenant are put in place; until that succeeds (Redis away, another process holding one of the
 * shards of the schedulers throughout), every read tries again.
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { App } from '../app.js';
import { checkTenantsNeeds, loadTenants, type TenantsFile } from '../config/tenants.js';
import type { TenantConfig } from '../config/tenants.js';
import type { ApplySchedules } from './schedules.js';

const POLL_MS = 2_000;

/** Watches `file` until the returned function is called. */
export function watchTenantsFile(app: App, file: string, applySchedules: ApplySchedules): () => void {
  watchFile(file, { interval: POLL_MS }, () => void reload(app, file, applySchedules));
  return () => unwatchFile(file);
}

async function reload(app: App, file: string, applySchedules: ApplySchedules): Promise<void> {
  const { env, logger } = app;
  let next: TenantsFile;
  try {
    next = await loadTenants(file);
    checkTenantsNeeds(next, env);
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'tenants file change ignored: it is invalid (the previous tenants and schedules stay in force)');
    return;
  }
  try {
    await applySchedules(withStored(app, next.tenants));
  } catch (err) {
    await applySchedules(app.tenants()).catch(() => undefined);
    logger.error({ err: (err as Error).message }, 'tenants file change ignored: its schedules could not be put in place (the previous tenants and schedules stay in force)');
    return;
  }
  app.setTenants(next);
  logger.info({ tenants: app.tenants().length }, 'tenants file reloaded');
}

/** The file's tenants and the stored ones the file does not name (the file's entry wins an id both have). */
function withStored(app: App, file: readonly TenantConfig[]): TenantConfig[] {
  const ids = new Set(file.map((t) => t.id));
  return [...file, ...app.tenantStore.list().flatMap((t) => (ids.has(t.config.id) ? [] : [t.config]))];
}

/** Reads the store's changes every `everyMs` until the returned function is called. */
export function watchTenantStore(app: App, applySchedules: ApplySchedules, everyMs: number): () => void {
  const logger = app.logger.child({ part: 'tenant-store' });
  let dirty = false;
  let busy = false;
  let failing = false;
  const tick = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      const changed = await app.tenantStore.sync();
      if (changed.length > 0) {
        dirty = true;
        logger.info({ changed: changed.slice(0, 20), count: changed.length, tenants: app.tenants().length }, 'stored tenants changed');
      }
      if (dirty) dirty = !(await applySchedules(app.tenants()));
      if (failing) logger.info('stored tenants read again');
      failing = false;
    } catch (err) {
      // Once per outage: the Redis outage log says the rest.
      if (!failing) logger.warn({ err: (err as Error).message }, 'stored tenants not read (tried again every poll)');
      failing = true;
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
