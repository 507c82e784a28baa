import type { Command } from 'commander';

const actions = () => import('../actions/tenants.js');

export function registerTenants(program: Command): void {
  const tenants = program.command('tenants').description('the tenants: those of the tenants file and those stored (over the API or here)');
  tenants
    .command('list')
    .description('every tenant: id, where it comes from (file or store), platform, schedule')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => (await actions()).list(o));
  tenants
    .command('show')
    .description("one tenant's settings (secrets named, never shown)")
    .argument('<id>', 'tenant id')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { json?: boolean }) => (await actions()).show(id, o));
  tenants
    .command('add')
    .description('store a tenant (a JSON entry as in the tenants file; ${VAR} read from this environment); needs PLATFORM_TOKEN_KEY')
    .argument('<file>', 'a JSON file of one entry, or - for stdin')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { json?: boolean }) => (await actions()).add(file, o));
  tenants
    .command('remove')
    .description('remove a stored tenant: its schedules end, its state is kept TENANT_STATE_RETENTION_DAYS (then purged)')
    .argument('<id>', 'tenant id')
    .option('--purge', 'delete its state now (cursors, id maps, dead letters, runs)')
    .option('--yes', 'do it (without it: says what it would do, does nothing and exits 2)')
    .option('--json', 'machine-readable output')
    .action(async (id: string, o: { yes?: boolean; purge?: boolean; json?: boolean }) => (await actions()).remove(id, o));
  tenants
    .command('import')
    .description("store every tenant of a tenants file (idempotent: new ones created, changed ones replaced); a move from the file to the store")
    .argument('<file>', 'a tenants file')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { json?: boolean }) => (await actions()).importFile(file, o));
}
