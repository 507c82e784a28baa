import type { Command } from 'commander';
import { requestSync, type SyncMode } from '../../queues/index.js';
import { waitForRun, type RunRecord } from '../../state/index.js';
import { describeCounts, recordsDone, runProgress } from '../progress.js';
import { openRuntime, out, parseDateOption, requireTenant } from '../runtime.js';

/** Exit codes of a waited run: 0 succeeded, 3 partial (some records dead-lettered), 1 failed. */
export function exitCodeOf(run: RunRecord): number {
  return run.outcome === 'succeeded' ? 0 : run.outcome === 'partial' ? 3 : 1;
}

async function enqueueAndMaybeWait(tenantId: string, mode: SyncMode, opts: { since?: string; wait?: boolean; json?: boolean }): Promise<number> {
  const rt = await openRuntime('producer');
  try {
    requireTenant(rt.app, tenantId);
    const { jobId, requestedAt } = await requestSync(rt.app.queues.sync, tenantId, mode, { trigger: 'cli', ...(opts.since ? { since: opts.since } : {}) });
    if (!opts.wait) {
      if (opts.json) out(JSON.stringify({ tenant: tenantId, mode, jobId, requestedAt }));
      else out(`queued a ${mode} sync of ${tenantId} (job ${jobId ?? '?'}); a worker runs it. Follow it with: collections-sync status --tenant ${tenantId}`);
      return 0;
    }
    const lastFinished = (await rt.app.stores.runs.recent(tenantId, 10)).find((r) => r.outcome !== undefined && r.startedAt < requestedAt);
    const progress = opts.json ? undefined : runProgress(`${tenantId} ${mode}`, lastFinished ? recordsDone(lastFinished.counts) : 0);
    const run = await waitForRun(rt.app.stores.runs, tenantId, { mode, requestedAt, onProgress: (r) => progress?.update(r) });
    progress?.update(run);
    progress?.stop();
    if (opts.json) out(JSON.stringify(run));
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

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description('enqueue a sync run of a tenant (incremental unless --full)')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--full', 'read everything, not just what changed since the cursor')
    .option('--wait', 'wait for the run, with progress; exit 0 succeeded, 3 partial, 1 failed')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; full?: boolean; wait?: boolean; json?: boolean }) => {
      process.exitCode = await enqueueAndMaybeWait(o.tenant, o.full ? 'full' : 'incremental', o);
    });

  program
    .command('backfill')
    .description('the manual backfill: a full run, optionally only of records changed since a date')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--since <YYYY-MM-DD>', 'only records updated on or after this date')
    .option('--wait', 'wait with a progress bar; exit 0 only when the run succeeded')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; since?: string; wait?: boolean; json?: boolean }) => {
      const since = o.since === undefined ? undefined : parseDateOption(o.since, '--since');
      process.exitCode = await enqueueAndMaybeWait(o.tenant, 'full', { ...o, ...(since ? { since } : {}) });
    });
}
