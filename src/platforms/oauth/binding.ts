/**
 * The connection a connect link bound to a tenant (decision 0141): which organisation or company (a Xero tenant id, a
 * QuickBooks realm, a Zoho Books organization) the customer granted, kept beside the token chain so an adapter whose
 * tenants-file entry names none can find its chain. One JSON value per tenant, `<base>:connect:{<tenant>}:binding`;
 * no token is ever in it.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { tenantKey } from '../../redis/keys.js';

export const bindingSchema = z.object({
  /** The platform's kind (its module's). */
  platform: z.string().min(1),
  /** The organisation id (Xero's tenantId, the `xero-tenant-id` header), the realm id, Zoho's organization_id. */
  connection: z.string().min(1),
  /** The organisation's name as the platform gave it, for `connect status`. */
  name: z.string().optional(),
  /** The platform's id of the grant's link to it (Xero: `DELETE /connections/{id}` disconnects it). */
  connectionId: z.string().optional(),
  /** Facts of the grant a platform keeps with the connection (Zoho: its data centre's accounts server, its API domain). */
  extra: z.record(z.string(), z.string()).optional(),
  connectedAt: z.number().int(),
});
export type Binding = z.infer<typeof bindingSchema>;

export class BindingStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return tenantKey(this.prefix, tenant, 'connect', 'binding');
  }

  async get(tenant: string): Promise<Binding | undefined> {
    const raw = await this.redis.get(this.key(tenant));
    if (raw === null) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return undefined;
    }
    const parsed = bindingSchema.safeParse(json);
    return parsed.success ? parsed.data : undefined;
  }

  async set(tenant: string, binding: Binding): Promise<void> {
    await this.redis.set(this.key(tenant), JSON.stringify(binding));
  }

  async remove(tenant: string): Promise<void> {
    await this.redis.del(this.key(tenant));
  }
}
