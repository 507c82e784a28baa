/**
 * The tenants-file watch. A changed tenants file is applied all or nothing: it is checked whole, its schedules are
 * put in place, and only then do its tenants replace the running ones. Otherwise the previous tenants and schedules
 * stay, and the log says so.
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { App } from '../app.js';
import { checkTenantsNeeds, loadTenants, type TenantsFile } from '../config/tenants.js';
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
    await applySchedules(next.tenants);
  } catch (err) {
    await applySchedules(app.tenants()).catch(() => undefined);
    logger.error({ err: (err as Error).message }, 'tenants file change ignored: its schedules could not be put in place (the previous tenants and schedules stay in force)');
    return;
  }
  app.setTenants(next);
  logger.info({ tenants: app.tenants().length }, 'tenants file reloaded');
}
