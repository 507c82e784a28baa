/**
 * `connect link|status|revoke`: connecting a tenant's Xero organisation or QuickBooks company (docs/connecting.md).
 * The actions are in ../actions/connect.ts, loaded when they run.
 */
import type { Command } from 'commander';

export function registerConnect(program: Command): void {
  const connect = program.command('connect').description("connect a tenant's Xero organisation or QuickBooks company: links, states, revocation");
  connect
    .command('link')
    .description('print a connect link for the tenant: the customer opens it and approves the access (PUBLIC_URL, PLATFORM_TOKEN_KEY)')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file (a xero or quickbooks tenant)')
    .option('--expires <duration>', 'how long the link works, e.g. 2h, 7d (default 7d, at most 30d)', '7d')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; expires: string; json?: boolean }) => {
      await (await import('../actions/connect.js')).link(o);
    });
  connect
    .command('status')
    .description('each xero and quickbooks tenant: connected (since when, refresh token age), awaiting connection, needs reconnect')
    .option('--tenant <id>', 'only this tenant')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant?: string; json?: boolean }) => {
      process.exitCode = await (await import('../actions/connect.js')).status(o);
    });
  connect
    .command('revoke')
    .description("revoke the tenant's connection at the platform and delete its token chain")
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--yes', 'revoke (without it: refused, exit 2)')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; yes?: boolean; json?: boolean }) => {
      await (await import('../actions/connect.js')).revoke(o);
    });
}
