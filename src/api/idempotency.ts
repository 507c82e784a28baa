/**
 * `Idempotency-Key` on the API's POSTs (the IETF httpapi idempotency-key draft): the first answer to a key is kept
 * for 24 h and a retry with the same key gets it again (status, body, Location), whatever happened meanwhile.
 *
 *   no answer kept for (key name, tenant, Idempotency-Key)   SET NX of a marker (60 s): this request runs; its 2xx
 *                                                            answer replaces the marker (24 h), anything else
 *                                                            deletes it (a retry may then run)
 *   the marker of a request under way                        409 idempotency-key-in-flight
 *   an answer kept, for the same method, path and body       that answer again, `Idempotent-Replayed: true`
 *   an answer kept, for another request                      422 idempotency-key-reused
 *
 * The key is scoped by the API key's name and the tenant (the key's owner, a Cluster hash tag): two callers' keys
 * never meet. A crash while a request runs leaves the marker for at most its 60 s.
 *
 * An answer that holds a secret (a connect link) is kept sealed with the token cipher (PLATFORM_TOKEN_KEY), bound to
 * its Redis key, as every other secret at rest (decision 0174); without a sealer it is not kept at all, and one that no
 * longer opens (the key changed: its link is dead too) is dropped and the request runs again.
 *
 * The answers kept per API key name are capped (API_IDEMPOTENCY_MAX_PER_KEY, decision 0170): an index per key name (a
 * sorted set under the key name's own hash tag, scored by when each answer was kept) names them, and past the cap the
 * oldest are deleted as a new one is kept. A retry of one deleted runs again, as after its 24 h.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { clientKey, tenantKey } from '../redis/keys.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
export const IN_FLIGHT_TTL_MS = 60_000;
/** API_IDEMPOTENCY_MAX_PER_KEY's default: answers kept per API key name. */
export const IDEMPOTENCY_MAX_PER_KEY = 10_000;
/** What the header may hold: printable ASCII, 1-255 characters. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

const keptSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('running'), fingerprint: z.string() }),
  z.object({ state: z.literal('done'), fingerprint: z.string(), status: z.number().int(), body: z.string(), location: z.string().optional() }),
  /** A secret answer: `box` is the sealed JSON of its body and location. */
  z.object({ state: z.literal('sealed'), fingerprint: z.string(), status: z.number().int(), box: z.string() }),
]);
const openedSchema = z.object({ body: z.string(), location: z.string().optional() });

export interface KeptAnswer {
  status: number;
  body: string;
  location?: string;
}

/** Seals a value bound to a context (the token cipher, src/platforms/oauth/cipher.ts, given by the composition root). */
export interface Sealer {
  encrypt(plain: string, context: string): string;
  /** Throws when the box was not sealed by this key for this context. */
  decrypt(box: string, context: string): string;
}

export type Claim =
  | {
      kind: 'run';
      /** Keeps the answer; `secret`: sealed, or not kept without a sealer. */
      finish(answer: KeptAnswer, o?: { secret?: boolean }): Promise<void>;
      abandon(): Promise<void>;
    }
  | { kind: 'replay'; answer: KeptAnswer }
  | { kind: 'in_flight' }
  | { kind: 'reused' };

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

export interface IdempotencyOptions {
  /** Answers kept per API key name (API_IDEMPOTENCY_MAX_PER_KEY); default IDEMPOTENCY_MAX_PER_KEY. */
  maxPerKey?: number;
  /** Seals secret answers; absent: they are not kept. */
  sealer?: Sealer;
  now?: () => number;
}

export class IdempotencyStore {
  private readonly maxPerKey: number;
  private readonly sealer: Sealer | undefined;
  private readonly now: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: IdempotencyOptions = {},
  ) {
    this.maxPerKey = options.maxPerKey ?? IDEMPOTENCY_MAX_PER_KEY;
    this.sealer = options.sealer;
    this.now = options.now ?? Date.now;
  }

  key(tenant: string, keyName: string, idempotencyKey: string): string {
    return this.keyOf(tenant, keyName, sha256(idempotencyKey));
  }

  private keyOf(tenant: string, keyName: string, digest: string): string {
    return tenantKey(this.prefix, tenant, ['api', 'idempotency'], keyName, digest);
  }

  /** The index of the answers kept for one API key name: members `<tenant>:<digest>`, scored by when each was kept. */
  private indexKey(keyName: string): string {
    return clientKey(this.prefix, keyName, ['api', 'idempotency-index']);
  }

  /** What to do with a request: `fingerprint` names it (method, path, body). */
  async claim(tenant: string, keyName: string, idempotencyKey: string, fingerprint: string): Promise<Claim> {
    const digest = sha256(idempotencyKey);
    const k = this.keyOf(tenant, keyName, digest);
    const fp = sha256(fingerprint);
    // Twice at most: a kept answer that expires between the SET and the GET is claimed on the second pass.
    for (let pass = 0; pass < 2; pass += 1) {
      if ((await this.redis.set(k, JSON.stringify({ state: 'running', fingerprint: fp }), 'PX', IN_FLIGHT_TTL_MS, 'NX')) === 'OK') {
        return {
          kind: 'run',
          finish: async (answer, o = {}) => {
            let kept: z.infer<typeof keptSchema>;
            if (o.secret !== true) kept = { state: 'done', fingerprint: fp, ...answer };
            else if (this.sealer !== undefined) {
              const box = this.sealer.encrypt(JSON.stringify({ body: answer.body, ...(answer.location !== undefined ? { location: answer.location } : {}) }), k);
              kept = { state: 'sealed', fingerprint: fp, status: answer.status, box };
            } else return void (await this.redis.del(k));
            await this.redis.set(k, JSON.stringify(kept), 'PX', IDEMPOTENCY_TTL_MS);
            await this.indexed(tenant, keyName, digest);
          },
          abandon: async () => void (await this.redis.del(k)),
        };
      }
      const raw = await this.redis.get(k);
      if (raw === null) continue;
      const kept = keptSchema.safeParse(JSON.parse(raw));
      if (!kept.success) throw new Error(`idempotency: ${k} holds no kept answer`);
      if (kept.data.fingerprint !== fp) return { kind: 'reused' };
      if (kept.data.state === 'running') return { kind: 'in_flight' };
      if (kept.data.state === 'sealed') {
        const opened = this.open(kept.data.box, k);
        if (opened === undefined) {
          // Sealed under another key (PLATFORM_TOKEN_KEY changed, and the link with it): as if never kept.
          await this.redis.del(k);
          continue;
        }
        return { kind: 'replay', answer: { status: kept.data.status, ...opened } };
      }
      const { status, body, location } = kept.data;
      return { kind: 'replay', answer: { status, body, ...(location !== undefined ? { location } : {}) } };
    }
    return { kind: 'in_flight' };
  }

  /** A sealed answer's body and location, or undefined when it does not open with this sealer. */
  private open(box: string, key: string): { body: string; location?: string } | undefined {
    try {
      if (this.sealer === undefined) return undefined;
      const parsed = openedSchema.safeParse(JSON.parse(this.sealer.decrypt(box, key)));
      if (!parsed.success) return undefined;
      return { body: parsed.data.body, ...(parsed.data.location !== undefined ? { location: parsed.data.location } : {}) };
    } catch {
      return undefined;
    }
  }

  /**
   * Names a kept answer in its key name's index, drops what expired from it, and deletes the oldest answers past the
   * cap. The index is one key (one slot); the answers are under their tenants' tags, so each is deleted on its own.
   * Two requests at the cap at once may each delete one: a few answers fewer than the cap for a moment, never more.
   */
  private async indexed(tenant: string, keyName: string, digest: string): Promise<void> {
    const index = this.indexKey(keyName);
    const now = this.now();
    const result = await this.redis
      .multi()
      .zadd(index, now, `${tenant}:${digest}`)
      .zremrangebyscore(index, '-inf', now - IDEMPOTENCY_TTL_MS)
      .pexpire(index, IDEMPOTENCY_TTL_MS)
      .zcard(index)
      .exec();
    const count = Number(result?.[3]?.[1] ?? 0);
    if (count <= this.maxPerKey) return;
    const popped = await this.redis.zpopmin(index, count - this.maxPerKey);
    const gone: string[] = [];
    // ZPOPMIN answers member, score, member, score...
    for (let i = 0; i < popped.length; i += 2) {
      const [owner, hash] = (popped[i] ?? '').split(':');
      if (owner !== undefined && hash !== undefined) gone.push(this.keyOf(owner, keyName, hash));
    }
    await Promise.all(gone.map((k) => this.redis.unlink(k)));
  }
}
