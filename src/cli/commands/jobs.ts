import type { Command } from 'commander';

export function registerJobs(program: Command): void {
  const jobs = program.command('jobs').description('the jobs of the queues, as your own code sees them');
  jobs
    .command('contract')
    .description('what your own code needs to add a job itself (a backfill from your own app): queue, BullMQ prefix, job name, JSON Schema of the data, deduplication, options; reads configuration only, no Redis')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => (await import('../actions/jobs.js')).contract(o));
}
