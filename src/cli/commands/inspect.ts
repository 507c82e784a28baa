import type { Command } from 'commander';
import { waitOptions } from '../wait-options.js';

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
  waitOptions(
    dl
      .command('retry')
      .description('push the dead-lettered records again (a replay run); says, per entity, which can be replayed and which need the source fixed')
      .requiredOption('--tenant <id>', 'tenant id'),
    'wait for the replay and report per entity what was replayed, what still fails and what needs the source fixed; exit 0 all replayed, 3 some left, 1 failed',
  )
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; wait?: boolean; keepWaiting?: boolean; waitTimeout?: string; json?: boolean }) => {
      process.exitCode = await (await actions()).deadLettersRetry(o);
    });

  program
    .command('id-map')
    .alias('mapping') // its first name, kept for scripts ("mapping" is now the mappers' room)
    .description('id maps (old name: mapping, deprecated)')
    .command('rebuild')
    .description("forget the tenant's id maps and hashes; the next run adopts the service's contacts by extPlatformId and re-pushes once")
    .requiredOption('--tenant <id>', 'tenant id')
    .option('--yes', 'do it (without it: says what it would do, does nothing and exits 2)')
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
