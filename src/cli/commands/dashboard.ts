import type { Command } from 'commander';

export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description('read-only job dashboard (bull-board) behind basic auth: DASHBOARD_USER, DASHBOARD_PASSWORD')
    .option('--port <port>', 'port (default DASHBOARD_PORT or 3000)')
    .option('--host <host>', 'address', '127.0.0.1')
    .action(async (o: { port?: string; host: string }) => (await import('../actions/dashboard.js')).dashboard(o));
}
