/** `status`, `dead-letters`, `mapping rebuild` and `dry-run`: what runs (the commands are in ../commands/inspect.ts). */
import { ENTITIES } from '../../glossary.js';
import { requestSync } from '../../queues/index.js';
import { dryRun as planDryRun } from '../../sync/dry-run.js';
import { describeCounts } from '../progress.js';
import { out, outJson, requireTenant, UsageError, withRuntime } from '../runtime.js';
import { evictionWarning } from '../../redis/connection.js';

const ago = (ms: number | null | undefined): string => {
  if (ms === undefined || ms === null) return '-';
  const seconds = Math.round((Date.now() - ms) / 1000);
  return `${new Date(ms).toISOString()} (${seconds >= 0 ? `${seconds} s ago` : `in ${-seconds} s`})`;
};

export async function status(o: { tenant?: string; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app }) => {
    const tenants = o.tenant ? [requireTenant(app, o.tenant)] : app.tenants();
    const queues: Record<string, Record<string, number>> = {};
    for (const [name, q] of Object.entries(app.queues)) queues[name] = await q.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed');
    const redisWarning = (await evictionWarning(app.redis)) ?? null;
    const report = [];
    for (const t of tenants) {
      const cursors: Record<string, unknown> = {};
      for (const e of ENTITIES) cursors[e] = (await app.stores.cursors.get(t.id, e))?.highWater ?? null;
      const auth = await app.auth.status(app.auth.clientKeyOf(t));
      report.push({
        tenant: t.id,
        platform: t.platform.kind,
        lastRuns: await app.stores.runs.recent(t.id, 5),
        cursors,
        auth,
        deadLetters: await app.stores.deadLetters.counts(t.id),
        pendingInvoices: await app.stores.pending.count(t.id),
        runLock: (await app.stores.runLock.holder(t.id)) ?? null,
      });
    }
    if (o.json) return outJson({ redis: { warning: redisWarning }, queues, tenants: report }, 2);
    if (redisWarning !== null) out(`redis: WARNING ${redisWarning}`);
    out('queues:');
    for (const [name, c] of Object.entries(queues)) out(`  ${name.padEnd(13)} ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    for (const r of report) {
      out(`\ntenant ${r.tenant} (${r.platform})`);
      const a = r.auth;
      const failure = a.failure ? `FAILED: ${a.failure.reason} (${a.failure.failures} times; next try ${ago(a.failure.nextAttemptAt)}). Fix the client secret in the tenants file; the worker picks it up.` : 'ok';
      out(`  auth: ${failure}; token v${a.version ?? '-'} expires ${ago(a.expiresAt)}${a.gateClosed ? '; GATE CLOSED (rotating)' : ''}`);
      for (const e of ENTITIES) {
        const c = r.cursors[e] as { updatedAt: string; id: string } | null;
        const future = c !== null && Date.parse(c.updatedAt) > Date.now() + 5 * 60_000 ? ' IN THE FUTURE (the next run reads everything and sets it back)' : '';
        out(`  cursor ${e.padEnd(9)} ${c ? `${c.updatedAt} / ${c.id}${future}` : '(none: next run reads everything)'}`);
      }
      out(`  dead letters: ${JSON.stringify(r.deadLetters)}; invoices waiting for their contact: ${r.pendingInvoices}`);
      if (r.runLock) out(`  running now: ${r.runLock}`);
      for (const run of r.lastRuns) {
        out(`  run ${run.runId} ${run.mode} ${run.outcome ?? `running (${run.phase ?? 'starting'})`} started ${ago(run.startedAt)}: ${describeCounts(run.counts)}`);
      }
    }
    return undefined;
  });
}

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
