/**
 * Where `.lua` files are read from: the folder the program runs from, `src/` under tsx and vitest, `dist/src/` once
 * built (`npm run build` copies every `.lua` file beside tsc's output: scripts/copy-lua.ts). The CLI's bundles
 * replace this module with one that holds every file's text (scripts/bundle-cli.ts), so a bundle reads no file.
 * A script's file is read once, at its first run (src/redis/script.ts).
 */
import { readFileSync } from 'node:fs';

const ROOT = new URL('../', import.meta.url);

/** The text of `<root>/<name>.lua`, or undefined when there is no such file. */
export function readLuaFile(name: string): string | undefined {
  try {
    return readFileSync(new URL(`${name}.lua`, ROOT), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
