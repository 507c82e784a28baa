/** A run context as the sync processor builds one, from a rig's app: for tests that drive `runSync` themselves. */
import { RunContext, type SyncSettings } from '../../jobs/sync/context.js';
import type { Pool } from '../../jobs/sync/pool.js';
import type { Rig } from './rig.js';

export function runContextOf(rig: Rig, tenant: string, o: { runId: string; pool: Pool; settings: SyncSettings; stop?: AbortSignal }): RunContext {
  const t = rig.app.tenant(tenant);
  if (!t) throw new Error(`no tenant ${tenant}`);
  const services = {
    logger: rig.app.logger,
    client: rig.app.clientFor(t),
    adapter: rig.app.adapterFor(t),
    stores: rig.app.stores,
    mirror: rig.app.mirror,
    flags: rig.app.flags,
    pool: o.pool,
    settings: o.settings,
  };
  return new RunContext({ tenant, runId: o.runId, mode: 'full', services, stop: o.stop ?? new AbortController().signal });
}
