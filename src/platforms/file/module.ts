/** The `file` platform (NDJSON exports in a folder, the record format): its config and adapter. */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import type { PlatformModule } from '../module.js';
import { LazyAdapter } from '../lazy-adapter.js';
import { isUnder, realPathOf } from './root.js';

export const fileConfig = z.strictObject({ kind: z.literal('file'), path: z.string().min(1) });
export type FileConfig = z.infer<typeof fileConfig>;

export const fileModule: PlatformModule<FileConfig> = {
  kind: 'file',
  label: 'Files',
  config: fileConfig,
  /** FILE_PLATFORM_ROOT (decision 0178): the folder is under it by real path (`..` and symbolic links resolved). */
  check(config, env) {
    const root = env.FILE_PLATFORM_ROOT;
    if (root === undefined) return [];
    if (!existsSync(root)) return [`path: FILE_PLATFORM_ROOT=${root} does not exist: make the folder, or set FILE_PLATFORM_ROOT to the one holding the file tenants' folders`];
    return isUnder(realPathOf(root), realPathOf(config.path)) ? [] : [`path: ${config.path} is outside FILE_PLATFORM_ROOT (${root}), once .. and symbolic links are resolved`];
  },
  createAdapter: (config, deps) =>
    new LazyAdapter('file', async () => {
      const { FileAdapter } = await import('./file-adapter.js');
      return new FileAdapter({ folder: config.path, ...(deps.fileRoot !== undefined ? { root: deps.fileRoot } : {}), logger: deps.logger.child({ platform: 'file' }) });
    }),
};
