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
const argv = process.argv.slice(2);
// `status` (its first word: commander then runs status, its help or a usage error, as the ES bundle would) runs
// from the same program built as one CommonJS script with a V8 code cache (decision 76).
const statusBundle = fileURLToPath(new URL('../dist/src/cli-status.cjs', import.meta.url));
if (argv[0] === 'status' && existsSync(statusBundle)) {
  const { runCachedMain } = await import('../dist/src/cli/code-cache.js');
  process.exitCode = await runCachedMain(statusBundle, argv);
} else {
  const { main } = await import(entry.href);
  process.exitCode = await main(argv);
}
