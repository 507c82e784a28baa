/** `dead-letters`, `mapping rebuild` and `dry-run`: what runs (the commands are in ../commands/inspect.ts; `status` is in status.ts). */
import { ENTITIES } from '../../glossary.js';
import { requestSync } from '../../queues/index.js';
import { dryRun as planDryRun } from '../../sync/dry-run.js';
import { out, outJson, requireTenant, UsageError, withRuntime } from '../runtime.js';

export async function deadLettersList(o: { tenant: string; entity?: string; limit: string; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app }) => {
    requireTenant(app, o.tenant);
    if (o.entity !== undefined && !(ENTITIES as readonly string[]).includes(o.entity)) throw new UsageError(`--entity must be one of ${ENTITIES.join(', ')}`);
    const limit = Number(o.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive whole number');
    const entries = await app.stores.deadLetters.list(o.tenant, { limit, ...(o.entity ? { entity: o.entity as (typeof ENTITIES)[number] } : {}) });
    if (o.json) return outJson(entries.map(({ record: _r, ...rest }) => rest), 2);
    if (entries.length === 0) return out(`no dead letters for ${o.tenant}`);
    for (const e of entries) {
      out(`${e.entity} ${e.platformId ?? '-'} ${e.place ? `at ${e.place} ` : ''}[${e.code}] ${e.reason} (${e.attempts}x, last ${new Date(e.at).toISOString()})`);
      if (e.detail !== undefined) out(`    detail: ${JSON.stringify(e.detail)}`);
    }
    return undefined;
  });
}

export async function deadLettersRetry(o: { tenant: string; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app }) => {
    requireTenant(app, o.tenant);
    const { jobId, requestedAt } = await requestSync(app.queues.sync, o.tenant, 'replay', { trigger: 'cli' });
    if (o.json) return outJson({ tenant: o.tenant, mode: 'replay', jobId, requestedAt });
    return out(`queued a replay of ${o.tenant}'s dead letters (job ${jobId ?? '?'})`);
  });
}

export async function idMapRebuild(o: { tenant: string; yes?: boolean; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app }) => {
    requireTenant(app, o.tenant);
    const owner = `cli-rebuild-${process.pid}`;
    if (!o.yes) {
      if (o.json) return outJson({ tenant: o.tenant, done: false, wouldForget: true, hint: 'add --yes to do it' });
      return out(`would forget ${o.tenant}'s state and queue a full run; add --yes to do it`);
    }
    if (!(await app.stores.runLock.acquire(o.tenant, owner, 60_000))) throw new UsageError(`a run of ${o.tenant} is under way; try again when it ends`);
    try {
      const n = await app.stores.forgetTenant(o.tenant, { keepRuns: true });
      const { jobId, requestedAt } = await requestSync(app.queues.sync, o.tenant, 'full', { trigger: 'cli' });
      if (o.json) return outJson({ tenant: o.tenant, done: true, forgotKeys: n, mode: 'full', jobId, requestedAt });
      out(`forgot ${n} state keys of ${o.tenant}; queued a full run (job ${jobId ?? '?'}) that adopts existing service records`);
    } finally {
      await app.stores.runLock.release(o.tenant, owner);
    }
    return undefined;
  });
}

export async function dryRun(o: { tenant: string; full?: boolean; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app, env }) => {
    const t = requireTenant(app, o.tenant);
    const reports = await planDryRun(t.id, {
      adapter: app.adapterFor(t),
      stores: app.stores,
      pageSize: env.SYNC_PAGE_SIZE,
      lookbackMs: env.CURSOR_LOOKBACK_S * 1000,
      ...(o.full ? { full: true } : {}),
    });
    if (o.json) return outJson(reports, 2);
    for (const r of reports) {
      out(`${r.entity.padEnd(9)} create ${r.create}, update ${r.update}, skip ${r.skip}, not pushed ${r.notPushed}, bad ${r.bad.length}, rejected ${r.rejected.length}`);
      for (const b of r.bad.slice(0, 10)) out(`    bad ${b.place}: ${b.reason}`);
      for (const x of r.rejected.slice(0, 10)) out(`    rejected ${x.platformId}: ${x.reason}`);
    }
    return undefined;
  });
}
