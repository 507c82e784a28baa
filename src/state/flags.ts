import type { Redis } from 'ioredis';
import { stateKey } from './keys.js';

/** Small per-tenant facts (e.g. "existing service contacts adopted"), one HASH per tenant. */
export class TenantFlags {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}
  private key(tenant: string): string {
    return stateKey(this.prefix, 'flags', tenant);
  }
  async get(tenant: string, flag: string): Promise<string | null> {
    return this.redis.hget(this.key(tenant), flag);
  }
  async set(tenant: string, flag: string, value: string): Promise<void> {
    await this.redis.hset(this.key(tenant), flag, value);
  }
  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(this.key(tenant));
  }
}
