/** `sync` and `backfill`: what runs (the commands are defined in ../commands/sync.ts). */
import { requestSync, type SyncMode } from '../../queues/index.js';
import { waitForRun, type RunRecord } from '../../state/index.js';
import { runProgress } from '../progress.js';
import { describeCounts, recordsDone } from '../run-counts.js';
import { openRuntime, out, outJson, parseDateOption, requireTenant } from '../runtime.js';
import { parseWaitTimeout, reportWaitEnded, WaitEnded, waitUnderWatch, type WaitFlags } from './wait.js';

/** Exit codes of a waited run: 0 succeeded, 3 partial (some records dead-lettered), 1 failed. */
export function exitCodeOf(run: RunRecord): number {
  return run.outcome === 'succeeded' ? 0 : run.outcome === 'partial' ? 3 : 1;
}

async function enqueueAndMaybeWait(tenantId: string, mode: SyncMode, opts: { since?: string } & WaitFlags & { wait?: boolean; json?: boolean }): Promise<number> {
  const rt = await openRuntime('producer');
  try {
    requireTenant(rt.app, tenantId);
    if (opts.wait) parseWaitTimeout(opts.waitTimeout); // a bad value is refused before anything is queued
    const { jobId, requestedAt, dedupeId } = await requestSync(rt.app.queues.sync, tenantId, mode, { trigger: 'cli', ...(opts.since ? { since: opts.since } : {}) });
    if (!opts.wait) {
      if (opts.json) outJson({ tenant: tenantId, mode, jobId, requestedAt });
      else out(`queued a ${mode} sync of ${tenantId} (job ${jobId ?? '?'}); a worker runs it. Follow it with: collections-sync status --tenant ${tenantId}`);
      return 0;
    }
    const lastFinished = (await rt.app.stores.runs.recent(tenantId, 10)).find((r) => r.outcome !== undefined && r.startedAt < requestedAt);
    const progress = opts.json ? undefined : runProgress(`${tenantId} ${mode}`, lastFinished ? recordsDone(lastFinished.counts) : 0);
    const run = await waitUnderWatch(rt, rt.app.queues.sync, { jobId: jobId ?? '', requestedAt, dedupeId }, opts, (signal, timeoutMs) =>
      waitForRun(rt.app.stores.runs, tenantId, { mode, requestedAt, signal, timeoutMs, onProgress: (r) => progress?.update(r) }),
    );
    if (run instanceof WaitEnded) {
      progress?.stop();
      return reportWaitEnded(run, opts.json, { tenant: tenantId, mode, jobId: run.job?.id ?? jobId, requestedAt });
    }
    progress?.update(run);
    progress?.stop();
    if (opts.json) outJson(run);
    else {
      out(`${tenantId}: ${mode} run ${run.runId} ${run.outcome ?? '?'} in ${(((run.finishedAt ?? Date.now()) - run.startedAt) / 1000).toFixed(1)} s`);
      out(`  ${describeCounts(run.counts) || 'nothing to do'}`);
      for (const e of run.errors.slice(0, 20)) out(`  - ${e}`);
      if (run.errors.length > 20) out(`  … ${run.errors.length - 20 + run.errorsOmitted} more: collections-sync dead-letters list --tenant ${tenantId}`);
    }
    return exitCodeOf(run);
  } finally {
    await rt.close();
  }
}

export interface SyncOptions extends WaitFlags {
  tenant: string;
  full?: boolean;
  since?: string;
  wait?: boolean;
  json?: boolean;
}

export async function sync(o: SyncOptions): Promise<number> {
  return enqueueAndMaybeWait(o.tenant, o.full ? 'full' : 'incremental', o);
}

export async function backfill(o: SyncOptions): Promise<number> {
  const since = o.since === undefined ? undefined : parseDateOption(o.since, '--since');
  return enqueueAndMaybeWait(o.tenant, 'full', { ...o, ...(since ? { since } : {}) });
}
