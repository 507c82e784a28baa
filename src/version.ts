/**
 * This package's version, read once from its package.json. The file is found by walking up from this module, since
 * the module runs from `src/` (tsx) and from `dist/src/` (built; the image copies package.json beside `dist/`).
 * Read at run time rather than imported as JSON, so `tsc` keeps `rootDir` and the build's layout as they are.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const NAME = 'collections-sync';
const manifestSchema = z.object({ name: z.string(), version: z.string().min(1) });

let cached: string | undefined;

function manifestIn(dir: string): z.infer<typeof manifestSchema> | undefined {
  try {
    return manifestSchema.parse(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')));
  } catch {
    return undefined;
  }
}

export function packageVersion(): string {
  if (cached !== undefined) return cached;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = manifestIn(dir);
    if (manifest?.name === NAME) return (cached = manifest.version);
    if (dirname(dir) === dir) throw new Error(`no package.json of ${NAME} above ${fileURLToPath(import.meta.url)}`);
  }
}
