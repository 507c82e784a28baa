import type { Command } from 'commander';

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description('enqueue a sync run of a tenant (incremental unless --full)')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--full', 'read everything, not just what changed since the cursor')
    .option('--wait', 'wait for the run, with progress; exit 0 succeeded, 3 partial, 1 failed (or no worker running)')
    .option('--keep-waiting', 'with --wait: go on waiting when no worker is running yet (default: say so and exit 1)')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; full?: boolean; wait?: boolean; keepWaiting?: boolean; json?: boolean }) => {
      process.exitCode = await (await import('../actions/sync.js')).sync(o);
    });

  program
    .command('backfill')
    .description('the manual backfill: a full run, optionally only of records changed since a date')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--since <YYYY-MM-DD>', 'only records updated on or after this date')
    .option('--wait', 'wait with a progress bar; exit 0 only when the run succeeded')
    .option('--keep-waiting', 'with --wait: go on waiting when no worker is running yet (default: say so and exit 1)')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; since?: string; wait?: boolean; keepWaiting?: boolean; json?: boolean }) => {
      process.exitCode = await (await import('../actions/sync.js')).backfill(o);
    });
}
