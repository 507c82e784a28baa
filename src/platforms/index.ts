/**
 * The platforms room: the adapter interface, the canonical records, and `createAdapter`, which builds the adapter a
 * tenant's `platform` config names. Adapters know nothing of the collections service, state or auth.
 */
import type { Logger } from 'pino';
import type { PlatformConfig } from '../config/index.js';
import { FileAdapter } from './file/index.js';
import { MemoryAdapter, memoryPlatforms as processMemoryPlatforms, type MemoryPlatformRegistry } from './memory/index.js';
import type { PlatformAdapter } from './types.js';

export * from './types.js';
export * from './records.js';
export { FileAdapter, writeNdjson, type FileAdapterOptions, type WriteNdjsonOptions } from './file/index.js';
export { MemoryAdapter, MemoryPlatform, MemoryPlatformRegistry, memoryPlatforms, type RawRecord } from './memory/index.js';

export interface AdapterDeps {
  logger: Logger;
  /** Where `memory` platforms are looked up by name; the process's registry when absent. */
  memoryPlatforms?: MemoryPlatformRegistry;
}

/** The platform kinds this build can sync from. */
export const AVAILABLE_PLATFORM_KINDS = ['file', 'memory'] as const;

/** Builds the adapter for one tenant's platform. Throws for a kind this build does not have yet. */
export function createAdapter(platform: PlatformConfig, deps: AdapterDeps): PlatformAdapter {
  switch (platform.kind) {
    case 'file':
      return new FileAdapter({ folder: platform.path, logger: deps.logger.child({ platform: 'file' }) });
    case 'memory':
      return new MemoryAdapter((deps.memoryPlatforms ?? processMemoryPlatforms).get(platform.name));
    case 'xero':
      throw new Error(`platform kind "xero" is not available yet in this build (available: ${AVAILABLE_PLATFORM_KINDS.join(', ')})`);
    default: {
      const unknown: never = platform;
      throw new Error(`unknown platform kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
