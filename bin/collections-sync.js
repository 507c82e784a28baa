#!/usr/bin/env node
// The command line. `npm ci` builds dist/ through the `prepare` script.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('collections-sync: dist/ is missing; run `npm run build` (npm ci does it through `prepare`).\n');
  process.exit(2);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
