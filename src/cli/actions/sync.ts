/** `sync` and `backfill`: what runs (the commands are defined in ../commands/sync.ts). */
import { requestSync, type SyncMode } from '../../queues/index.js';
import { waitForRun, type RunRecord } from '../../state/index.js';
import { runProgress } from '../progress.js';
import { describeCounts, recordsDone } from '../run-counts.js';
import { openRuntime, out, outJson, parseDateOption, requireTenant } from '../runtime.js';
import { NoWorkerError, safeRedisUrl, watchForWorker } from './worker-watch.js';

/** Exit codes of a waited run: 0 succeeded, 3 partial (some records dead-lettered), 1 failed. */
export function exitCodeOf(run: RunRecord): number {
  return run.outcome === 'succeeded' ? 0 : run.outcome === 'partial' ? 3 : 1;
}

async function enqueueAndMaybeWait(tenantId: string, mode: SyncMode, opts: { since?: string; wait?: boolean; keepWaiting?: boolean; json?: boolean }): Promise<number> {
  const rt = await openRuntime('producer');
  try {
    requireTenant(rt.app, tenantId);
    const { jobId, requestedAt } = await requestSync(rt.app.queues.sync, tenantId, mode, { trigger: 'cli', ...(opts.since ? { since: opts.since } : {}) });
    if (!opts.wait) {
      if (opts.json) outJson({ tenant: tenantId, mode, jobId, requestedAt });
      else out(`queued a ${mode} sync of ${tenantId} (job ${jobId ?? '?'}); a worker runs it. Follow it with: collections-sync status --tenant ${tenantId}`);
      return 0;
    }
    const lastFinished = (await rt.app.stores.runs.recent(tenantId, 10)).find((r) => r.outcome !== undefined && r.startedAt < requestedAt);
    const progress = opts.json ? undefined : runProgress(`${tenantId} ${mode}`, lastFinished ? recordsDone(lastFinished.counts) : 0);
    const watch = watchForWorker(rt.app.queues.sync, {
      where: `${safeRedisUrl(rt.env.REDIS_URL)}, KEY_PREFIX ${rt.env.KEY_PREFIX}`,
      keepWaiting: opts.keepWaiting ?? false,
      say: (line) => process.stderr.write(`collections-sync: ${line}\n`),
    });
    let run: RunRecord;
    try {
      run = await waitForRun(rt.app.stores.runs, tenantId, { mode, requestedAt, signal: watch.signal, onProgress: (r) => progress?.update(r) });
    } catch (err) {
      if (!(err instanceof NoWorkerError)) throw err;
      progress?.stop();
      process.stderr.write(`collections-sync: ${err.message}\n`);
      if (opts.json) outJson({ tenant: tenantId, mode, jobId, requestedAt, status: 'queued', waited: false, reason: 'no worker' });
      return 1;
    } finally {
      watch.stop();
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

export interface SyncOptions {
  tenant: string;
  full?: boolean;
  since?: string;
  wait?: boolean;
  keepWaiting?: boolean;
  json?: boolean;
}

export async function sync(o: SyncOptions): Promise<number> {
  return enqueueAndMaybeWait(o.tenant, o.full ? 'full' : 'incremental', o);
}

export async function backfill(o: SyncOptions): Promise<number> {
  const since = o.since === undefined ? undefined : parseDateOption(o.since, '--since');
  return enqueueAndMaybeWait(o.tenant, 'full', { ...o, ...(since ? { since } : {}) });
}
