/**
 * FILE_PLATFORM_ROOT: the folder every `file` tenant's `path` must be under (decision 0178). A path is judged as the
 * adapter opens it: resolved from the working directory, `..` taken out and every symbolic link of the part that
 * exists followed (a folder not made yet is judged by the real path of its nearest existing parent).
 */
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** `path` from the working directory with `..` resolved and the symbolic links of its existing part followed. */
export function realPathOf(path: string): string {
  let at = resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(at), ...rest.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    const parent = dirname(at);
    if (parent === at) return resolve(path);
    rest.push(basename(at));
    at = parent;
  }
}

/** Whether `path` is `root` or under it (both real paths). */
export function isUnder(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
