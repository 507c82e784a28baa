/**
 * `npm run build`'s second step, after tsc: every `.lua` file of src/ copied beside tsc's output, in dist/src/ at the
 * same path, where the built program reads its scripts (src/redis/lua-files.ts). Files of an earlier build are
 * removed first, so dist/src holds exactly src's. The CLI's bundles embed them from there (scripts/bundle-cli.ts).
 */
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const OUT = join(ROOT, 'dist', 'src');

const luaFiles = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { recursive: true }).catch(() => [])).filter((f) => f.endsWith('.lua'));

for (const old of await luaFiles(OUT)) await rm(join(OUT, old));
const files = await luaFiles(SRC);
if (files.length === 0) throw new Error(`no .lua files under ${SRC}`);
for (const f of files) {
  await mkdir(dirname(join(OUT, f)), { recursive: true });
  await copyFile(join(SRC, f), join(OUT, f));
}
process.stdout.write(`lua: ${files.length} files copied to dist/src\n`);
