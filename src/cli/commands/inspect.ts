import type { Command } from 'commander';

const actions = () => import('../actions/inspect.js');
const statusAction = () => import('../actions/status.js');

export function registerInspect(program: Command): void {
  program
    .command('status')
    .description('queues, last runs, cursors, auth state and dead letters, per tenant')
    .option('--tenant <id>', 'one tenant only')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant?: string; json?: boolean }) => (await statusAction()).status(o));

  const dl = program.command('dead-letters').description('records that could not be pushed, with their place and reason');
  dl.command('list')
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--entity <entity>', 'contacts, invoices or payments')
    .option('--limit <n>', 'how many', '50')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; entity?: string; limit: string; json?: boolean }) => (await actions()).deadLettersList(o));
  dl.command('retry')
    .description('push the dead-lettered records again (a replay run)')
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; json?: boolean }) => (await actions()).deadLettersRetry(o));

  program
    .command('id-map')
    .alias('mapping') // its first name, kept for scripts (issue 11: "mapping" is the mappers' room)
    .description('id maps (old name: mapping, deprecated)')
    .command('rebuild')
    .description("forget the tenant's id maps and hashes; the next run adopts the service's contacts by extPlatformId and re-pushes once")
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--yes', 'do it (without it, only says what it would do)')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; yes?: boolean; json?: boolean }) => (await actions()).idMapRebuild(o));

  program
    .command('dry-run')
    .description('what a sync would create, update and skip, without writing anything')
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--full', 'as a full run')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; full?: boolean; json?: boolean }) => (await actions()).dryRun(o));
}
