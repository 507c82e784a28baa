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
 *
 * `status` runs from a second bundle of the same program (decision 76): dist/src/cli-status.cjs, one CommonJS
 * script (no chunks) that bin/collections-sync.js compiles with a V8 code cache beside it
 * (src/cli/code-cache.ts), so a start neither parses nor compiles the ~1.4 MB of commander, zod, ioredis and ours
 * that status runs. It holds status's dynamic imports (its action, the state app, the environment and tenants
 * parsers); every other command's action is left out, in its place a module that fails if ever imported. The
 * build then writes the cache with a run of `status` against a closed port (it fails to reach Redis after parsing
 * the environment and a tenants file, building the stores and connecting: what a real run compiles, but the
 * reads), so a folder the CLI may not write to (the image's) has one from the start; the first real run replaces it
 * where it can write (with what the reads and the output compile too: 3-4% of a start).
 *
 * Both bundles embed the Lua scripts: src/redis/lua-files.ts, which reads a `.lua` file from disk, is replaced by a
 * module holding the text of every file scripts/copy-lua.ts put in dist/src, so a bundle reads no file for its
 * scripts and does not depend on where its chunks land.
 */
import { isAscii } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}dist/src`;
const CHUNKS = 'cli-chunks';

/** Packages inlined, and with them what they import (but optional native add-ons). */
const INLINED = new Set(['commander', 'zod', 'ioredis', 'bullmq', 'p-retry']);
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

/** Every `.lua` file of dist/src by its name (path from dist/src, no `.lua`): what src/redis/lua-files.ts reads. */
async function luaTexts(): Promise<Record<string, string>> {
  const files = (await readdir(OUT, { recursive: true })).filter((f) => f.endsWith('.lua')).sort();
  if (files.length === 0) throw new Error(`no .lua files in ${OUT}: scripts/copy-lua.ts copies them there (npm run build)`);
  const out: Record<string, string> = {};
  for (const f of files) out[f.split('\\').join('/').slice(0, -'.lua'.length)] = await readFile(join(OUT, f), 'utf8');
  return out;
}
const LUA_READER = `${OUT}/redis/lua-files.js`;
const LUA_TEXTS = JSON.stringify(await luaTexts());
/** Replaces the Lua reader in a bundle; fails the build when a bundle holds the program but not the reader. */
const embeddedLua: Plugin = {
  name: 'embedded-lua',
  setup(b) {
    let embedded = false;
    b.onLoad({ filter: /[\\/]lua-files\.js$/ }, (args) => {
      if (args.path !== LUA_READER) return undefined;
      embedded = true;
      return {
        contents: `const FILES = ${LUA_TEXTS};\nexport function readLuaFile(name) { return Object.hasOwn(FILES, name) ? FILES[name] : undefined; }\n`,
        loader: 'js',
      };
    });
    b.onEnd((r) => {
      const holdsScripts = Object.keys(r.metafile?.inputs ?? {}).some((f) => f.endsWith('dist/src/redis/script.js'));
      if (holdsScripts && !embedded) throw new Error(`a bundle holds src/redis/script.ts but not the embedded Lua (${LUA_READER} was never loaded)`);
    });
  },
};

const sharedOptions = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
} as const;

await rm(`${OUT}/${CHUNKS}`, { recursive: true, force: true });
const result = await build({
  ...sharedOptions,
  entryPoints: { 'cli.bundle': 'dist/src/cli.js' },
  outdir: OUT,
  chunkNames: `${CHUNKS}/[name]-[hash]`,
  splitting: true,
  format: 'esm',
  plugins: [embeddedLua, externals],
  // CommonJS packages inlined in an ES module call require() for Node's own modules and their files.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
});
const files = Object.values(result.metafile.outputs);
process.stdout.write(`cli bundle: ${files.length} files, ${Math.round(files.reduce((n, f) => n + f.bytes, 0) / 1024)} KiB in dist/src\n`);

// The status bundle. What status imports when it runs (paths as written in dist/src's modules, by importer); the
// warm-up run below fails the build if status meets one left out before it connects.
const STATUS_IMPORTS = new Set(['cli/commands/inspect.js ../actions/status.js', 'cli/runtime.js ../app-state.js', 'cli/runtime.js ../config/env.js', 'cli/runtime.js ../config/tenants.js', 'cli.js ./config/env.js']);
const STATUS = `${OUT}/cli-status.cjs`;
const statusOnly: Plugin = {
  name: 'status-only',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind !== 'dynamic-import' || args.importer.includes('/node_modules/')) return undefined;
      const from = args.importer.slice(`${OUT}/`.length);
      return STATUS_IMPORTS.has(`${from} ${args.path}`) ? undefined : { path: `${from} ${args.path}`, namespace: 'not-in-status-bundle' };
    });
    b.onLoad({ filter: /.*/, namespace: 'not-in-status-bundle' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is not in the status bundle (scripts/bundle-cli.ts)`)});`,
      loader: 'js',
    }));
  },
};
const statusResult = await build({
  ...sharedOptions,
  entryPoints: ['dist/src/cli.js'],
  outfile: STATUS,
  format: 'cjs',
  write: false,
  plugins: [statusOnly, embeddedLua, externals],
  // A CommonJS script has no import.meta: our modules' import.meta.url is the bundle's own URL.
  define: { 'import.meta.url': '__bundleUrl' },
  banner: { js: "var __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
});
// A CommonJS script requires what it does not inline: Node 20 cannot require an ES module package, so status may
// take nothing from node_modules but what is inlined (debug's optional supports-color aside, a require in a try).
const required = Object.values(statusResult.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external && !isBuiltin(i.path)).map((i) => i.path));
const unexpected = [...new Set(required)].filter((p) => p !== 'supports-color');
if (unexpected.length > 0) throw new Error(`${STATUS} would require ${unexpected.join(', ')} from node_modules: inline them (INLINED) or keep them off status's path`);
// esbuild escapes every non-ASCII character of code (its default charset) but leaves comments as they are: the
// few of zod's become `?`, and the script is ASCII, which the loader reads without decoding.
const statusText = statusResult.outputFiles[0]!.text.replace(/^([ \t]*\/\/.*)$/gm, (line) => line.replace(/[\u0080-\uffff]/g, '?'));
if (!isAscii(Buffer.from(statusText))) throw new Error(`${STATUS}: non-ASCII characters outside line comments`);
await writeFile(STATUS, statusText);
// Its loader (src/cli/code-cache.ts), required by bin/collections-sync.js, a CommonJS script.
const LOADER = `${OUT}/cli-status-loader.cjs`;
await build({ ...sharedOptions, entryPoints: ['dist/src/cli/code-cache.js'], outfile: LOADER, format: 'cjs', metafile: false });
await rm(`${STATUS}.cache`, { force: true });
await warmStatusCache();
process.stdout.write(`cli status bundle: ${Math.round(statusText.length / 1024)} KiB, code cache ${Math.round((await readFile(`${STATUS}.cache`)).length / 1024)} KiB\n`);

/** Runs status once against a closed port, which writes its code cache (src/cli/code-cache.ts). */
async function warmStatusCache(): Promise<void> {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
  const dir = await mkdtemp(join(tmpdir(), 'cs-status-warm-'));
  try {
    const tenants = join(dir, 'tenants.json');
    await writeFile(tenants, JSON.stringify({ tenants: [{ id: 'warm', collections: { clientId: 'warm', clientSecret: 'warm' }, platform: { kind: 'file', path: dir } }] }));
    // No NODE_OPTIONS (a V8 flag there would make V8 refuse the cache at a user's run) nor the builder's settings.
    const run = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(LOADER)}).runCachedMain(${JSON.stringify(STATUS)}, ['status'], 'warm-up')`], {
      env: { PATH: process.env['PATH'] ?? '', REDIS_URL: `redis://127.0.0.1:${String(port)}`, TENANTS_FILE: tenants, KEY_PREFIX: '{warm}', LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (!run.stderr.includes('cannot reach Redis')) throw new Error(`the status bundle's warm-up run did not get to Redis (exit ${String(run.status)}): ${run.stderr}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
