import type { Command } from 'commander';
import type { SyncOptions } from '../actions/sync.js';
import { waitOptions } from '../wait-options.js';

export function registerSync(program: Command): void {
  waitOptions(
    program
      .command('sync')
      .description('enqueue a sync run of a tenant (incremental unless --full)')
      .requiredOption('--tenant <id>', 'tenant id from the tenants file')
      .option('--full', 'read everything, not just what changed since the cursor'),
    'wait for the run, with progress; exit 0 succeeded, 3 partial, 1 failed',
  )
    .option('--json', 'machine-readable output')
    .action(async (o: SyncOptions) => {
      process.exitCode = await (await import('../actions/sync.js')).sync(o);
    });

  waitOptions(
    program
      .command('backfill')
      .description('the manual backfill: a full run, optionally only of records changed since a date')
      .requiredOption('--tenant <id>', 'tenant id from the tenants file')
      .option('--since <YYYY-MM-DD>', 'only records updated on or after this date'),
    'wait for the run, with progress; exit 0 succeeded, 3 partial, 1 failed',
  )
    .option('--json', 'machine-readable output')
    .action(async (o: SyncOptions) => {
      process.exitCode = await (await import('../actions/sync.js')).backfill(o);
    });
}
