/**
 * The benchmark's worker and naive processes run the program as built (tsc's output in dist/, what
 * `collections-sync worker` runs), not the TypeScript sources through tsx's loader: tsx keeps function names by
 * wrapping every closure a worker makes (`__name`, a defineProperty each time), ~2% of a warm worker's CPU that no
 * user pays. `buildProgram` builds dist/ from this checkout once, at the bench's start, so a figure is never
 * taken from an older build. The worker process's own script (bench/worker-child.ts) is bundled beside it,
 * dist/bench-worker-child.mjs, so it too runs without tsx: tsx's loader held ~45 MB of a worker's RSS and took
 * every dynamic import of the program through its hooks (1% of a worker's CPU at 2,000 tenants).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = new URL('..', import.meta.url);

/** A module of the built program, typed as its source (`typeof import('../src/app.js')`). */
export async function shipped<M>(path: `src/${string}.js`): Promise<M> {
  return (await import(new URL(`dist/${path}`, ROOT).href)) as M;
}

/** `npm run build` (tsc, then the CLI's bundles); throws with its output when it fails. */
export function buildProgram(): void {
  const r = spawnSync('npm', ['run', 'build'], { cwd: fileURLToPath(ROOT), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`bench: npm run build failed (exit ${r.status ?? r.signal})\n${r.stdout}${r.stderr}`.slice(0, 4000));
}

/** The worker process's script as plain JavaScript (dist/ is one folder below the root, as bench/ is: `shipped` finds dist/src from it). */
export const WORKER_CHILD = fileURLToPath(new URL('dist/bench-worker-child.mjs', ROOT));

/** Bundles bench/worker-child.ts (and the protocol it shares with the bench) into WORKER_CHILD; packages stay imports. */
export async function bundleWorkerChild(): Promise<void> {
  await build({
    entryPoints: [fileURLToPath(new URL('bench/worker-child.ts', ROOT))],
    outfile: WORKER_CHILD,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
}
