import type { Command } from 'commander';

export function registerApi(program: Command): void {
  const api = program.command('api').description('the control API of the public server (/v1, docs/api.md)');
  api
    .command('openapi')
    .description('prints the OpenAPI 3.1 document of the control API (what GET /v1/openapi.json answers); no Redis, no configuration')
    .option('--json', 'the same: the document is JSON either way')
    .action(async () => (await import('../actions/api.js')).openapi());
}
