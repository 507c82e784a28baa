import type { Command } from 'commander';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the product end to end with no configuration: private Redis, simulator, sample data, a full and an incremental sync, a summary')
    .option('--contacts <n>', 'customers in the sample', '300')
    .option('--json', 'print only the summary (with --write-sample: what was written), as JSON')
    .option('--write-sample <folder>', 'only write the sample (NDJSON files of a `file` tenant) into this folder, and exit')
    .action(async (o: { contacts: string; json?: boolean; writeSample?: string }) => (await import('../actions/demo.js')).demo(o));
}
