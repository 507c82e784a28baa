export { MemoryPlatform, MemoryPlatformRegistry, memoryPlatforms, type RawRecord } from './memory-platform.js';
export { MemoryAdapter, encodeMemoryToken, decodeMemoryToken, MEMORY_DEFAULT_PAGE_SIZE, MEMORY_MAX_PAGE_SIZE } from './memory-adapter.js';
