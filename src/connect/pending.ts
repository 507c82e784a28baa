/**
 * What a connect flow keeps between the customer's requests, in Redis with a short TTL, each taken once (GETDEL,
 * Redis >= 6.2): an authorization in progress, by its `state` (the tenant it is for and the PKCE verifier), and a
 * grant of several organisations (companies) waiting for the customer's pick. Secrets (the verifier, the grant's tokens) are
 * encrypted with the token cipher, bound to their key; a value taken is gone, so a reused `state` or pick finds
 * nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { TokenCipher } from '../platforms/oauth/cipher.js';
import { globalKey } from '../redis/keys.js';

/** How long a customer has on the platform's consent screen, and to pick an organisation. */
export const STATE_TTL_MS = 10 * 60_000;
export const PICK_TTL_MS = 10 * 60_000;

/**
 * The link an authorization came from (its id) and whether it may replace a connection, carried to the binding; and
 * the browser that opened it (a digest of its cookie): the callback and the pick must come from that browser.
 */
const linkFields = { link: z.string(), reconnect: z.boolean(), browser: z.string() };
const stateSchema = z.object({ tenant: z.string(), ...linkFields, verifier: z.string().optional(), at: z.number() });
const grantSchema = z.object({
  tenant: z.string(),
  ...linkFields,
  refreshToken: z.string(),
  accessToken: z.string(),
  expiresInS: z.number(),
  orgs: z.array(z.object({ id: z.string(), name: z.string().optional(), connectionId: z.string().optional() })),
  /** What the platform said of the connection beside the tokens (Zoho's data centre, its API domain). */
  extra: z.record(z.string(), z.string()).optional(),
});

export type PendingState = { tenant: string; link: string; reconnect: boolean; browser: string; verifier?: string | undefined; at: number };
export type PendingGrant = z.infer<typeof grantSchema>;

const digest = (v: string): string => createHash('sha256').update(v, 'utf8').digest('base64url').slice(0, 32);

function parse<T>(schema: z.ZodType<T>, text: string): T | undefined {
  try {
    const r = schema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

export class PendingStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly cipher: TokenCipher,
  ) {}

  private stateKey(state: string): string {
    return globalKey(this.prefix, 'connect', 'state', digest(state));
  }

  private grantKey(id: string): string {
    return globalKey(this.prefix, 'connect', 'grant', digest(id));
  }

  async putState(state: string, value: PendingState): Promise<void> {
    await this.put(this.stateKey(state), value, STATE_TTL_MS);
  }

  /** The authorization `state` started, once: a second take (or after the TTL) is undefined. */
  async takeState(state: string): Promise<PendingState | undefined> {
    return this.take(this.stateKey(state), stateSchema);
  }

  /** Keeps a grant for the customer's pick; its id goes into the pick links. */
  async putGrant(grant: PendingGrant): Promise<string> {
    const id = randomBytes(18).toString('base64url');
    await this.put(this.grantKey(id), grant, PICK_TTL_MS);
    return id;
  }

  async takeGrant(id: string): Promise<PendingGrant | undefined> {
    return this.take(this.grantKey(id), grantSchema);
  }

  /** Encrypted, bound to its key, for `ttlMs`. */
  private async put(key: string, value: unknown, ttlMs: number): Promise<void> {
    await this.redis.set(key, this.cipher.encrypt(JSON.stringify(value), key), 'PX', ttlMs);
  }

  /** Taken once (GETDEL); a value that does not decrypt or parse is as good as none. */
  private async take<T>(key: string, schema: z.ZodType<T>): Promise<T | undefined> {
    const box = await this.redis.getdel(key);
    if (box === null) return undefined;
    try {
      return parse(schema, this.cipher.decrypt(box, key));
    } catch {
      return undefined;
    }
  }
}
