/**
 * Signed capabilities of the connect room (decision 0140): a connect link (`/connect/<token>`) lets whoever holds it
 * start one tenant's authorization, until it expires; a pick (`/oauth/choose/<token>`) chooses one organisation of a
 * grant waiting in Redis. A token is `v1.<payload>.<mac>`: the payload (base64url JSON) says what it allows, the mac
 * is HMAC-SHA256 over `v1.<payload>` under a key derived from PLATFORM_TOKEN_KEY with HKDF and a label of its own.
 * A token that does not verify, has expired, or is of another kind is undefined: callers answer it as they answer
 * no token at all, so nothing tells a forged link from an expired or foreign one.
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { sameDigest } from '../guards.js';
import { z } from 'zod';
import { parseTokenKey } from '../config/token-key.js';

const VERSION = 'v1';
const LABEL = 'collections-sync connect link';

const linkSchema = z.strictObject({ k: z.literal('link'), t: z.string().min(1), e: z.number().int(), n: z.string() });
const pickSchema = z.strictObject({ k: z.literal('pick'), t: z.string().min(1), e: z.number().int(), p: z.string().min(1), o: z.string().min(1) });
const payloadSchema = z.discriminatedUnion('k', [linkSchema, pickSchema]);

export type LinkClaims = z.infer<typeof linkSchema>;
export type PickClaims = z.infer<typeof pickSchema>;

const macKey = (tokenKey: string): Buffer => Buffer.from(hkdfSync('sha256', parseTokenKey(tokenKey), Buffer.alloc(0), LABEL, 32));

export class Capabilities {
  readonly #key: Buffer;
  /** PLATFORM_TOKEN_KEY_PREVIOUS's: a link signed before a key rotation still verifies (decision 0163). */
  readonly #previous: Buffer | undefined;

  constructor(tokenKey: string, private readonly now: () => number = Date.now, previousTokenKey?: string) {
    this.#key = macKey(tokenKey);
    this.#previous = previousTokenKey === undefined ? undefined : macKey(previousTokenKey);
  }

  /** A connect link's token for `tenant`, valid for `ttlMs`; `id` is its nonce (the link's id, links.ts). */
  link(tenant: string, ttlMs: number): { token: string; expiresAt: number; id: string } {
    const e = Math.floor((this.now() + ttlMs) / 1000);
    const id = randomBytes(9).toString('base64url');
    return { token: this.sign({ k: 'link', t: tenant, e, n: id }), expiresAt: e * 1000, id };
  }

  /** A pick's token: organisation `org` of the grant `pending`, for `tenant`. */
  pick(tenant: string, pending: string, org: string, ttlMs: number): string {
    return this.sign({ k: 'pick', t: tenant, e: Math.floor((this.now() + ttlMs) / 1000), p: pending, o: org });
  }

  verifyLink(token: string): LinkClaims | undefined {
    const c = this.verify(token);
    return c?.k === 'link' ? c : undefined;
  }

  verifyPick(token: string): PickClaims | undefined {
    const c = this.verify(token);
    return c?.k === 'pick' ? c : undefined;
  }

  private sign(claims: LinkClaims | PickClaims): string {
    const head = `${VERSION}.${Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url')}`;
    return `${head}.${this.mac(head).toString('base64url')}`;
  }

  private verify(token: string): LinkClaims | PickClaims | undefined {
    if (token.length > 2048) return undefined;
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return undefined;
    const [, payload, mac] = parts as [string, string, string];
    const given = Buffer.from(mac, 'base64url');
    const ok = (key: Buffer): boolean => {
      const want = this.mac(`${VERSION}.${payload}`, key);
      return sameDigest(given, want);
    };
    if (!ok(this.#key) && (this.#previous === undefined || !ok(this.#previous))) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    const parsed = payloadSchema.safeParse(json);
    if (!parsed.success || parsed.data.e * 1000 <= this.now()) return undefined;
    return parsed.data;
  }

  private mac(text: string, key: Buffer = this.#key): Buffer {
    return createHmac('sha256', key).update(text, 'utf8').digest();
  }
}
