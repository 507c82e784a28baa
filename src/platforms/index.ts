/**
 * The platforms room: the adapter interface, the canonical records, and `createAdapter`, which builds the adapter a
 * tenant's `platform` config names. Adapters know nothing of the collections service, state or auth.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { PlatformConfig } from '../config/index.js';
import { FileAdapter } from './file/index.js';
import { MemoryAdapter, memoryPlatforms as processMemoryPlatforms, type MemoryPlatformRegistry } from './memory/index.js';
import type { PlatformAdapter } from './types.js';
import { BoundAdapter } from './bound-adapter.js';
import { BindingStore } from './oauth/binding.js';
import type { TokenCipher } from './oauth/cipher.js';
import type { PlatformAuthHooks } from './oauth/oauth.js';
import { QuickBooksAdapter, quickBooksAccess } from './quickbooks/index.js';
import { XeroAdapter } from './xero/index.js';

export * from './types.js';
export * from './records.js';
export { FileAdapter, writeNdjson, type FileAdapterOptions, type WriteNdjsonOptions } from './file/index.js';
export { MemoryAdapter, MemoryPlatform, MemoryPlatformRegistry, memoryPlatforms, type RawRecord } from './memory/index.js';
export { XeroAdapter, type XeroAdapterOptions } from './xero/index.js';
export { QuickBooksAdapter, type QuickBooksAdapterOptions } from './quickbooks/index.js';

export interface AdapterDeps {
  logger: Logger;
  /** File: FILE_PLATFORM_ROOT, under which every file read must really be (symbolic links followed). */
  fileRoot?: string;
  /** Where `memory` platforms are looked up by name; the process's registry when absent. */
  memoryPlatforms?: MemoryPlatformRegistry;
  /** Xero, QuickBooks: the Redis connection for tokens and rate limits (shared by every process of the fleet). */
  redis?: Redis;
  /** Xero: KEY_PREFIX, under which its keys live (`<prefix>:xero:<xeroTenantId>:...`: src/redis/keys.ts). */
  prefix?: string;
  /**
   * Xero, QuickBooks: PLATFORM_TOKEN_KEY, 32 bytes (base64 or hex) encrypting refresh tokens at rest; or the cipher of
   * the environment's keys (PLATFORM_TOKEN_KEY_PREVIOUS read too, during a rotation).
   */
  tokenKey?: string | TokenCipher;
  /** Xero, QuickBooks: the tenant's id, under which a connect link keeps the organisation (realm) it bound. */
  tenantId?: string;
  /** Xero, QuickBooks: told of the token chain's events (a grant the platform refused). */
  authHooks?: PlatformAuthHooks;
}

/** The binding-reading adapter of a tenant whose tenants-file entry names no organisation (realm) yet. */
function bound(kind: 'xero' | 'quickbooks', deps: AdapterDeps, build: (connection: string) => PlatformAdapter): PlatformAdapter {
  if (deps.redis === undefined || deps.prefix === undefined || deps.tenantId === undefined) {
    throw new Error(`a ${kind} tenant without its ${kind === 'xero' ? 'xeroTenantId' : 'realmId'} needs the Redis connection, KEY_PREFIX and its tenant id (createAdapter deps redis, prefix and tenantId)`);
  }
  return new BoundAdapter(kind, deps.tenantId, new BindingStore(deps.redis, deps.prefix), build);
}

/** Builds the adapter for one tenant's platform. Throws for a kind this build does not have yet. */
export function createAdapter(platform: PlatformConfig, deps: AdapterDeps): PlatformAdapter {
  switch (platform.kind) {
    case 'file':
      return new FileAdapter({ folder: platform.path, ...(deps.fileRoot !== undefined ? { root: deps.fileRoot } : {}), logger: deps.logger.child({ platform: 'file' }) });
    case 'memory':
      return new MemoryAdapter((deps.memoryPlatforms ?? processMemoryPlatforms).get(platform.name));
    case 'xero': {
      if (deps.tokenKey === undefined || deps.tokenKey === '') {
        throw new Error('a xero tenant needs PLATFORM_TOKEN_KEY in the environment: 32 random bytes as base64 or hex (e.g. `openssl rand -base64 32`), which encrypts its refresh tokens at rest');
      }
      if (deps.redis === undefined || deps.prefix === undefined) throw new Error('a xero tenant needs the Redis connection and KEY_PREFIX (createAdapter deps redis and prefix)');
      if (platform.xeroTenantId === undefined) return bound('xero', deps, (xeroTenantId) => createAdapter({ ...platform, xeroTenantId }, deps));
      return new XeroAdapter({
        redis: deps.redis,
        prefix: deps.prefix,
        tokenKey: deps.tokenKey,
        clientId: platform.clientId,
        clientSecret: platform.clientSecret,
        refreshToken: platform.refreshToken,
        xeroTenantId: platform.xeroTenantId,
        apiUrl: platform.apiUrl,
        tokenUrl: platform.tokenUrl,
        logger: deps.logger.child({ platform: 'xero' }),
        ...(deps.authHooks ? { hooks: deps.authHooks } : {}),
      });
    }
    case 'quickbooks': {
      if (deps.tokenKey === undefined || deps.tokenKey === '') {
        throw new Error('a quickbooks tenant needs PLATFORM_TOKEN_KEY in the environment: 32 random bytes as base64 or hex (e.g. `openssl rand -base64 32`), which encrypts its refresh tokens at rest');
      }
      if (deps.redis === undefined || deps.prefix === undefined) throw new Error('a quickbooks tenant needs the Redis connection and KEY_PREFIX (createAdapter deps redis and prefix)');
      const { redis, prefix, tokenKey } = deps;
      const realmId = platform.realmId;
      if (realmId === undefined) return bound('quickbooks', deps, (connection) => createAdapter({ ...platform, realmId: connection }, deps));
      const logger = deps.logger.child({ platform: 'quickbooks' });
      return new QuickBooksAdapter({
        redis,
        prefix,
        realmId,
        apiUrl: platform.apiUrl,
        access: (dispatcher) => quickBooksAccess({ ...platform, realmId }, { redis, prefix, tokenKey, dispatcher, logger, ...(deps.authHooks ? { hooks: deps.authHooks } : {}) }),
        logger,
      });
    }
    default: {
      const unknown: never = platform;
      throw new Error(`unknown platform kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
