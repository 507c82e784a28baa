/**
 * The adapter of an OAuth platform's tenant, as every OAuth module builds it: the settings it needs checked (a
 * PLATFORM_TOKEN_KEY to seal its chain, Redis), then the platform's adapter for the connection its tenants-file entry
 * names, or a BoundAdapter that reads the connection a connect link bound.
 */
import type { Redis } from 'ioredis';
import { BoundAdapter } from '../bound-adapter.js';
import { LazyAdapter } from '../lazy-adapter.js';
import type { AdapterDeps, OAuthModule } from '../module.js';
import type { PlatformAdapter } from '../types.js';
import { BindingStore, type Binding } from './binding.js';
import { TokenCipher } from './cipher.js';

export interface ConnectedDeps extends AdapterDeps {
  redis: Redis;
  prefix: string;
  tokenKey: TokenCipher;
}

export function connectedAdapter<C>(
  module: OAuthModule<C>,
  config: C,
  deps: AdapterDeps,
  /** Builds the platform's adapter for a connection, importing its code (called on the first read, not here). */
  build: (connection: string, binding: Binding | undefined, deps: ConnectedDeps) => Promise<PlatformAdapter>,
): PlatformAdapter {
  const kind = module.chain.kind;
  const { redis, prefix, tokenKey } = deps;
  if (tokenKey === undefined) {
    throw new Error(`a ${kind} tenant needs PLATFORM_TOKEN_KEY in the environment: 32 random bytes as base64 or hex (e.g. \`openssl rand -base64 32\`), which encrypts its refresh tokens at rest`);
  }
  if (redis === undefined || prefix === undefined) throw new Error(`a ${kind} tenant needs the Redis connection and KEY_PREFIX (createAdapter deps redis and prefix)`);
  const full: ConnectedDeps = { ...deps, redis, prefix, tokenKey: typeof tokenKey === 'string' ? TokenCipher.fromText(tokenKey) : tokenKey };
  const named = module.connectionOf(config);
  if (named !== undefined) return new LazyAdapter(kind, () => build(named, undefined, full));
  if (deps.tenantId === undefined) throw new Error(`a ${kind} tenant without its ${module.connectionField} needs its tenant id (createAdapter deps tenantId)`);
  return new BoundAdapter(kind, deps.tenantId, new BindingStore(redis, prefix), (binding) => build(binding.connection, binding, full));
}
