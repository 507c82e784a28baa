/** The `memory` platform: an in-process store for tests, the demo and the benchmark. */
import { z } from 'zod';
import type { PlatformModule } from '../module.js';
import { LazyAdapter } from '../lazy-adapter.js';

export const memoryConfig = z.strictObject({ kind: z.literal('memory'), name: z.string().min(1).default('default') });
export type MemoryConfig = z.infer<typeof memoryConfig>;

export const memoryModule: PlatformModule<MemoryConfig> = {
  kind: 'memory',
  label: 'Memory (tests)',
  config: memoryConfig,
  createAdapter: (config, deps) =>
    new LazyAdapter('memory', async () => {
      const [{ MemoryAdapter }, { memoryPlatforms }] = await Promise.all([import('./memory-adapter.js'), import('./memory-platform.js')]);
      return new MemoryAdapter((deps.memoryPlatforms ?? memoryPlatforms).get(config.name));
    }),
};
