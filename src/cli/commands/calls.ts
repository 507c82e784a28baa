import type { Command } from 'commander';
import type { CampaignOptions } from '../actions/calls.js';
import { waitOptions } from '../wait-options.js';

const actions = () => import('../actions/calls.js');

export function registerCalls(program: Command): void {
  const calls = program.command('calls').description('AI collection calls: campaigns from synced overdue invoices or a list, single calls, unknown outcomes');

  const withSettings = (c: Command): Command =>
    c
      .option('--template <uuid>', 'AI settings template for every call (default: the tenant\'s, else the service default)')
      .option('--update-existing', 'let the service update the names of contacts it matches by number')
      .option('--no-update-existing', 'never update matched contacts')
      .option('--country-code <XX>', 'countryCode sent with each request')
      .option('--batch-size <n>', 'the service\'s processing batch size (10-1000)')
      .option('--request-size <n>', 'numbers per bulk-call request (default: the tenant\'s, 50)')
      .option('--currency <XXX>', 'currency of invoices that carry none (default SAR)');

  waitOptions(withSettings(
    calls
      .command('campaign')
      .description('call every customer with overdue invoices (or every number of a list), once')
      .requiredOption('--tenant <id>', 'tenant id from the tenants file')
      .option('--overdue-days <n>', 'invoices at least this many days past due')
      .option('--min-amount <n>', 'invoices with at least this much outstanding', '0')
      .option('--as-of <YYYY-MM-DD>', 'count days overdue from this day (default today, UTC)')
      .option('--list <file>', 'call the numbers of a .csv, .tsv or .json list instead')
      .option('--delimiter <char>', 'with a .csv/.tsv list: , ; | or tab (default: taken from the header line)')
      .option('--skip-bad-rows', 'with --list: call the good rows when some are bad')
      .option('--dry-run', 'show who would be called and who is left out; reserve and call nothing')
      .option('--yes', 'place the calls without asking (without it: asks on a terminal, else says how many, queues nothing and exits 2)'),
  ), 'wait for the campaign (--dry-run always waits) and print its report; exit 0 all called, 3 unknown or failed outcomes')
    .option('--json', 'machine-readable output')
    .action(async (o: CampaignOptions) => {
    process.exitCode = await (await actions()).campaign(o);
  });

  waitOptions(
    calls
      .command('one')
      .description('call one synced contact now (single call; the call ledger\'s cooldown applies)')
      .requiredOption('--tenant <id>', 'tenant id from the tenants file')
      .requiredOption('--contact-uuid <uuid>', 'the service uuid of the contact'),
    'wait for the call request and print its outcome; exit 0 called, 3 unknown or failed outcome',
  )
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; contactUuid: string; wait?: boolean; keepWaiting?: boolean; waitTimeout?: string; json?: boolean }) => {
      process.exitCode = await (await actions()).one(o);
    });

  calls
    .command('list')
    .description('recent campaigns per tenant, or (--unknown) the calls whose outcome is unknown')
    .option('--tenant <id>', 'one tenant only')
    .option('--unknown', 'only calls waiting for an operator to confirm or release')
    .option('--limit <n>', 'campaigns per tenant', '20')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant?: string; unknown?: boolean; limit: string; json?: boolean }) => (await actions()).list(o));

  calls
    .command('report')
    .description('the report of one campaign')
    .requiredOption('--campaign <id>', 'campaign id')
    .option('--json', 'machine-readable output')
    .action(async (o: { campaign: string; json?: boolean }) => (await actions()).report(o));

  for (const action of ['confirm', 'release'] as const) {
    calls
      .command(action)
      .description(
        action === 'confirm'
          ? 'the unknown calls of a campaign did happen: keep their numbers in cooldown'
          : 'the unknown calls of a campaign did not happen: free their numbers for a later campaign',
      )
      .requiredOption('--tenant <id>', 'tenant id from the tenants file')
      .requiredOption('--campaign <id>', 'campaign id')
      .option('--number <e164>', 'only this number (default: every unknown call of the campaign)')
      .option('--json', 'machine-readable output')
      .action(async (o: { tenant: string; campaign: string; number?: string; json?: boolean }) => (await actions()).resolve(action, o));
  }

  calls
    .command('events')
    .description('the call webhook events kept for a tenant, newest first, and what each settled')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--limit <n>', 'events to show', '100')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; limit: string; json?: boolean }) => (await import('../actions/calls-events.js')).events(o));

  calls
    .command('cancel')
    .description('stop a campaign before its next request (requests already sent are not undone)')
    .requiredOption('--campaign <id>', 'campaign id')
    .option('--json', 'machine-readable output')
    .action(async (o: { campaign: string; json?: boolean }) => (await actions()).cancel(o));
}
