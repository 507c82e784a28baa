#!/usr/bin/env node
// The command line. `npm ci` builds dist/ through the `prepare` script: tsc, then the CLI's bundle
// (scripts/bundle-cli.ts; issue 14: a start reads a few files instead of a few hundred modules).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli.bundle.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('collections-sync: dist/ is missing; run `npm run build` (npm ci does it through `prepare`).\n');
  process.exit(2);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
