/**
 * `connect link|revoke-link|status|revoke`: connecting a tenant's account on an OAuth platform (an organisation, a company)
 * (docs/connecting.md). The actions are in ../actions/connect.ts, loaded when they run.
 */
import type { Command } from 'commander';

export function registerConnect(program: Command): void {
  const connect = program.command('connect').description("connect a tenant's account on an OAuth platform (its organisation or company): links, states, revocation");
  connect
    .command('link')
    .description('print a connect link for the tenant and its id: the customer opens it and approves the access; it works once (PUBLIC_URL, PLATFORM_TOKEN_KEY)')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file (a tenant of an OAuth platform)')
    .option('--expires <duration>', 'how long the link works, e.g. 2h, 7d (default 7d, at most 30d)', '7d')
    .option('--reconnect', 'a link that may replace the connection the tenant has (another organisation included); without it a tenant that has one is refused (exit 2)')
    .option('--json', 'machine-readable output')
    .action(async (o: { tenant: string; expires: string; reconnect?: boolean; json?: boolean }) => {
      await (await import('../actions/connect.js')).link(o);
    });
  connect
    .command('revoke-link')
    .description('revoke one outstanding connect link by the id `connect link` printed: opened afterwards, it is refused')
    .argument('<link-id>', 'the link id (`connect status` lists the outstanding ones)')
    .requiredOption('--tenant <id>', 'tenant id from the tenants file')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { tenant: string; json?: boolean }) => {
      await (await import('../actions/connect.js')).revokeLink(id, o);
    });
  connect
    .command('status')
    .description('each tenant of an OAuth platform: connected (since when, refresh token age), awaiting connection, needs reconnect')
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
