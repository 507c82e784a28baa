/** `dead-letters`, `mapping rebuild` and `dry-run`: what runs (the commands are in ../commands/inspect.ts; `status` is in status.ts). */
import { ENTITIES, type Entity } from '../../glossary.js';
import { requestSync } from '../../queues/index.js';
import { waitForRun } from '../../state/index.js';
import { dryRun as planDryRun } from '../../sync/dry-run.js';
import { out, outJson, requireTenant, UsageError, withRuntime, type Runtime } from '../runtime.js';
import { parseWaitTimeout, reportWaitEnded, WaitEnded, waitUnderWatch, type WaitFlags } from './wait.js';

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

/** One dead letter as a replay report counts it: kept with its record (replayable) or not (a bad source line). */
interface Letter {
  entity: Entity;
  replayable: boolean;
  /** The source line (file:line, page) or the platform id. */
  where: string;
  reason: string;
}

/** Every dead letter of a tenant, by entry key (paged; the records themselves are dropped at once). */
async function letters(app: Runtime['app'], tenant: string): Promise<Map<string, Letter>> {
  const found = new Map<string, Letter>();
  let after: string | undefined;
  do {
    const batch = await app.stores.deadLetters.take(tenant, { limit: 500, ...(after ? { after } : {}) });
    for (const e of batch.entries) found.set(e.key, { entity: e.entity, replayable: e.record !== undefined, where: e.place ?? e.platformId ?? e.key, reason: e.reason });
    after = batch.next;
  } while (after !== undefined);
  return found;
}

export interface ReplayEntityReport {
  /** Before the replay: dead letters kept with their record, which a replay pushes again. */
  replayable: number;
  /** Pushed by the replay: no longer dead letters. */
  replayed?: number;
  /** Pushed again and refused again (or dead-lettered anew by the replay). */
  stillFailing?: number;
  /** Kept without a record (a source line that could not be read): only fixing the source helps. */
  needsSourceFix: number;
  /** A few of those left, with where and why. */
  examples: string[];
}

function replayReport(before: Map<string, Letter>, after?: Map<string, Letter>): Partial<Record<Entity, ReplayEntityReport>> {
  const report: Partial<Record<Entity, ReplayEntityReport>> = {};
  const row = (entity: Entity): ReplayEntityReport => (report[entity] ??= { replayable: 0, needsSourceFix: 0, examples: [], ...(after ? { replayed: 0, stillFailing: 0 } : {}) });
  const example = (r: ReplayEntityReport, l: Letter): void => {
    if (r.examples.length < 3) r.examples.push(`${l.where}: ${l.reason}`);
  };
  for (const [key, l] of before) {
    const r = row(l.entity);
    if (!l.replayable) {
      r.needsSourceFix += 1;
      example(r, after?.get(key) ?? l);
      continue;
    }
    r.replayable += 1;
    if (!after) continue;
    const now = after.get(key);
    if (now === undefined) r.replayed = (r.replayed ?? 0) + 1;
    else {
      r.stillFailing = (r.stillFailing ?? 0) + 1;
      example(r, now);
    }
  }
  for (const [key, l] of after ?? []) {
    if (before.has(key)) continue;
    const r = row(l.entity);
    if (l.replayable) r.stillFailing = (r.stillFailing ?? 0) + 1;
    else r.needsSourceFix += 1;
    example(r, l);
  }
  return report;
}

function printReplayReport(report: Partial<Record<Entity, ReplayEntityReport>>, tenant: string): void {
  for (const [entity, r] of Object.entries(report)) {
    const counts =
      r.replayed === undefined
        ? `${r.replayable} to replay, ${r.needsSourceFix} need the source fixed`
        : `replayed ${r.replayed}, still failing ${r.stillFailing ?? 0}, need the source fixed ${r.needsSourceFix}`;
    out(`  ${entity}: ${counts}`);
    for (const e of r.examples) out(`    ${e}`);
  }
  const rows = Object.values(report);
  if (rows.some((r) => r.needsSourceFix > 0)) out('  a dead letter that needs the source fixed has no record to push: fix the line it names; the next run reads it again');
  if (rows.some((r) => (r.stillFailing ?? 0) > 0 || r.needsSourceFix > 0)) out(`  all of them: collections-sync dead-letters list --tenant ${tenant}`);
}

/**
 * `dead-letters retry`: queues a replay run and says, per entity, what it can do (records kept with their dead
 * letters are pushed again; bad source lines have none). With --wait, compares the dead letters before and after
 * the run: replayed, still failing, needs the source fixed. Exit 0 all replayed, 3 some left, 1 the run failed.
 */
export async function deadLettersRetry(o: { tenant: string; json?: boolean; wait?: boolean } & WaitFlags): Promise<number> {
  return withRuntime(async (rt) => {
    const { app } = rt;
    requireTenant(app, o.tenant);
    if (o.wait) parseWaitTimeout(o.waitTimeout);
    const before = await letters(app, o.tenant);
    const { jobId, requestedAt, dedupeId } = await requestSync(app.queues.sync, o.tenant, 'replay', { trigger: 'cli' });
    const fields = { tenant: o.tenant, mode: 'replay', jobId, requestedAt };
    if (!o.wait) {
      const report = replayReport(before);
      if (o.json) outJson({ ...fields, deadLetters: before.size, byEntity: report });
      else {
        const replayable = [...before.values()].filter((l) => l.replayable).length;
        out(`queued a replay of ${o.tenant}'s dead letters (job ${jobId ?? '?'}): ${before.size} dead letters, ${replayable} can be replayed, ${before.size - replayable} need the source fixed`);
        printReplayReport(report, o.tenant);
        if (replayable > 0) out(`  follow it with: collections-sync status --tenant ${o.tenant} (or retry with --wait)`);
      }
      return 0;
    }
    const run = await waitUnderWatch(rt, app.queues.sync, { jobId: jobId ?? '', requestedAt, dedupeId }, o, (signal, timeoutMs) =>
      waitForRun(app.stores.runs, o.tenant, { mode: 'replay', requestedAt, signal, timeoutMs }),
    );
    if (run instanceof WaitEnded) return reportWaitEnded(run, o.json, { ...fields, jobId: run.job?.id ?? jobId });
    const report = replayReport(before, await letters(app, o.tenant));
    const left = Object.values(report).reduce((n, r) => n + (r.stillFailing ?? 0) + r.needsSourceFix, 0);
    if (o.json) outJson({ ...fields, runId: run.runId, outcome: run.outcome, counts: run.counts, errors: run.errors, deadLettersLeft: left, byEntity: report });
    else {
      out(`${o.tenant}: replay run ${run.runId} ${run.outcome ?? '?'}; ${left === 0 ? 'no dead letters left' : `${left} dead letters left`}`);
      printReplayReport(report, o.tenant);
      for (const e of run.errors.slice(0, 5)) out(`  - ${e}`);
    }
    return run.outcome === 'failed' ? 1 : left > 0 ? 3 : 0;
  });
}

export async function idMapRebuild(o: { tenant: string; yes?: boolean; json?: boolean }): Promise<void> {
  return withRuntime(async ({ app }) => {
    requireTenant(app, o.tenant);
    const owner = `cli-rebuild-${process.pid}`;
    // A confirmation refused is a usage error, exit 2, as for `calls campaign` (README "The command line").
    if (!o.yes) throw new UsageError(`would forget ${o.tenant}'s state and queue a full run; nothing was done: add --yes to do it`);
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
