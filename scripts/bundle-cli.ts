/**
 * The command line's bundle (issue 14: `status` and `--help` start fast), run by `npm run build` after tsc:
 * dist/src/cli.js and what it imports, in dist/src/cli.bundle.js plus chunks in dist/src/cli-chunks/, which
 * bin/collections-sync.js loads. Each command's actions stay a dynamic import, so a chunk loads when its command
 * runs (`--help` loads the entry only).
 *
 * Most of a start is module loading: one file per module found, read and linked (zod is 95 files, ioredis and its
 * dependencies ~40). The bundle inlines the packages the light commands load, commander, zod and ioredis, and
 * BullMQ, which must share ioredis' copy (our connections are handed to its queues and workers), with what those
 * import. Every other package stays an import from node_modules as before: the image's production dependencies
 * are still what the code needs (test/ops/image.test.ts), and pino (its transports start workers from its own
 * files), the dashboard's (its UI's files from its package folder) and optional native add-ons run as installed.
 */
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}dist/src`;
const CHUNKS = 'cli-chunks';

/** Packages inlined, and with them what they import (but optional native add-ons). */
const INLINED = new Set(['commander', 'zod', 'ioredis', 'bullmq']);
/** Loaded by the inlined packages when installed, native or absent: always from node_modules. */
const NEVER_INLINED = new Set(['msgpackr-extract', 'pg', 'redis', 'bullmq-otel']);

const packageOf = (specifier: string): string => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

const externals: Plugin = {
  name: 'externals',
  setup(b) {
    // Bare specifiers only (relative and absolute paths are files of a package or ours, bundled with it).
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { external: true };
      const name = packageOf(args.path);
      if (NEVER_INLINED.has(name)) return { external: true };
      if (INLINED.has(name)) return undefined;
      // Only inlined packages' files get here from node_modules (an external one is never read): what they import
      // comes along; what our code imports stays an import.
      return args.importer.includes('/node_modules/') ? undefined : { external: true };
    });
  },
};

await rm(`${OUT}/${CHUNKS}`, { recursive: true, force: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { 'cli.bundle': 'dist/src/cli.js' },
  outdir: OUT,
  chunkNames: `${CHUNKS}/[name]-[hash]`,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  plugins: [externals],
  // CommonJS packages inlined in an ES module call require() for Node's own modules and their files.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const files = Object.values(result.metafile.outputs);
process.stdout.write(`cli bundle: ${files.length} files, ${Math.round(files.reduce((n, f) => n + f.bytes, 0) / 1024)} KiB in dist/src\n`);
