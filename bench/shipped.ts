/**
 * The benchmark's worker and naive processes run the program as built (tsc's output in dist/, what
 * `collections-sync worker` runs), not the TypeScript sources through tsx's loader: tsx keeps function names by
 * wrapping every closure a worker makes (`__name`, a defineProperty each time), ~2% of a warm worker's CPU that no
 * user pays. `buildProgram` builds dist/ from this checkout once, at the bench's start, so a figure is never
 * taken from an older build.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
