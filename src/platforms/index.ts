/**
 * The platforms room: the adapter interface, the canonical records, and `createAdapter`, which builds the adapter a
 * tenant's `platform` config names. Adapters know nothing of the collections service, state or auth.
 */
import { moduleOf, type PlatformConfig } from './registry.js';
import type { AdapterDeps } from './module.js';
import type { PlatformAdapter } from './types.js';

export * from './types.js';
export * from './records.js';
export { FileAdapter, writeNdjson, type FileAdapterOptions, type WriteNdjsonOptions } from './file/index.js';
export { MemoryAdapter, MemoryPlatform, MemoryPlatformRegistry, memoryPlatforms, type RawRecord } from './memory/index.js';
export { PLATFORMS, PLATFORM_KINDS, OAUTH_KINDS, moduleOf, oauthOf, labelOf, type PlatformKind, type PlatformConfig } from './registry.js';
export type { AdapterDeps, PlatformModule, OAuthModule } from './module.js';

/** Builds the adapter for one tenant's platform, by its kind's module (registry.ts). */
export function createAdapter(platform: PlatformConfig, deps: AdapterDeps): PlatformAdapter {
  return moduleOf(platform).createAdapter(platform, deps);
}
