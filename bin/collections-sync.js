#!/usr/bin/env node
// The command line. `npm ci` builds dist/ through the `prepare` script: tsc, then the CLI's bundles
// (scripts/bundle-cli.ts; issue 14: a start reads a few files instead of a few hundred modules).
//
// A CommonJS script (bin/package.json): `status` runs from the program built as one CommonJS script with a V8
// code cache (decision 76) and never needs Node's ES module loader, whose start a CommonJS entry skips. Every
// other command runs from the ES module bundle. `status` is the first word: commander then runs status, its help
// or a usage error, as the ES bundle would.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const dist = join(__dirname, '..', 'dist', 'src');
const entry = join(dist, 'cli.bundle.js');
if (!existsSync(entry)) {
  process.stderr.write('collections-sync: dist/ is missing; run `npm run build` (npm ci does it through `prepare`).\n');
  process.exit(2);
}
const argv = process.argv.slice(2);
const statusBundle = join(dist, 'cli-status.cjs');
const run =
  argv[0] === 'status' && existsSync(statusBundle)
    ? require(join(dist, 'cli-status-loader.cjs')).runCachedMain(statusBundle, argv)
    : import(pathToFileURL(entry).href).then(({ main }) => main(argv));
run.then((code) => {
  process.exitCode = code;
});
