/**
 * Where a platform connection's tokens live (a Xero organisation, a QuickBooks company): one Redis hash per
 * connection (`<base>:<platform>:{<connection>}:oauth`, the owner its hash tag: src/redis/keys.ts), with
 * fields `v` (the version, raised by every write), `seed` (the fingerprint of the tenants file's refresh token the
 * chain started from), `seen` (fingerprints of every seed so far), `state` (JSON; tokens encrypted, see
 * cipher.ts) and `undecryptable` (set once when a process found the state sealed under another key than it has:
 * decision 0163; every write of a state clears it). Every write is one Lua script: a rotation is committed only while its writer still holds the
 * refresh lock and the version is the one it read (a fence against stale writers); a rotation whose lock was lost
 * can still be landed on the version it read (`commitAt`, for platforms that refuse the old refresh token once its
 * successor exists). The raw tokens never reach Redis.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { connectionKey } from '../../redis/keys.js';
import { LuaScript } from '../../redis/script.js';

export const storedStateSchema = z.object({
  /** The current refresh token (encrypted). */
  cur: z.string(),
  /** The refresh token used for the latest rotation (encrypted), kept for a platform's grace window (Xero's). */
  prev: z.string().optional(),
  /** When `prev` was first used (epoch ms): Xero's grace runs from then. */
  prevUsedAt: z.number().optional(),
  /** The access token of the latest rotation (encrypted) and until when to use it (expiry minus a margin). */
  access: z.string().optional(),
  accessUntil: z.number().optional(),
  rotatedAt: z.number().optional(),
  /** When a connect link started this chain (epoch ms); absent for a chain seeded from the tenants file. */
  connectedAt: z.number().optional(),
  rotations: z.number().int().default(0),
  /** Set when the platform refused the refresh token for good (invalid_grant); cleared by a new token in the tenants file. */
  revoked: z.object({ at: z.number(), reason: z.string() }).optional(),
});

export type StoredState = z.infer<typeof storedStateSchema>;

export interface StoredTokens {
  version: number;
  seed: string;
  state: StoredState;
  /** Found sealed under a key this worker does not have (when, and what was told). */
  undecryptable?: UndecryptableMark;
}

const markSchema = z.object({ at: z.number(), reason: z.string() });
export type UndecryptableMark = z.infer<typeof markSchema>;

const SEED = new LuaScript('platforms/oauth/lua/tokens-seed', { numKeys: 1 });
const COMMIT = new LuaScript('platforms/oauth/lua/tokens-commit', { numKeys: 2 });
const CONNECT = new LuaScript('platforms/oauth/lua/tokens-connect', { numKeys: 2 });
const MARK = new LuaScript('platforms/oauth/lua/tokens-mark', { numKeys: 1 });

/** The platform whose tokens are kept (its module's kind): the first word of their keys. */
export type OAuthPlatformKind = string;

export type CommitResult = { ok: true; version: number } | { ok: false; why: 'lock-lost' | 'version-moved' };

export class PlatformTokenStore {
  readonly key: string;
  readonly lockKey: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly platform: OAuthPlatformKind,
    connection: string,
  ) {
    this.key = connectionKey(prefix, connection, platform, 'oauth');
    this.lockKey = connectionKey(prefix, connection, platform, 'oauth-lock');
  }

  /** The stored tokens; undefined when none; throws when the stored value is not ours (corrupt). */
  async read(): Promise<StoredTokens | undefined> {
    const [v, seed, state, mark] = await this.redis.hmget(this.key, 'v', 'seed', 'state', 'undecryptable');
    if (v == null || seed == null || state == null) return undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(state);
    } catch {
      raw = undefined;
    }
    const parsed = storedStateSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`the stored ${this.platform} token state at ${this.key} is not readable`);
    const undecryptable = mark == null ? undefined : parseMark(mark);
    return { version: Number(v), seed, state: parsed.data, ...(undecryptable ? { undecryptable } : {}) };
  }

  /**
   * 0: already seeded from this (or an older) token; 1: first seed; 2: a new token restarted the chain. `previous`:
   * the token's fingerprint under the key being rotated out, which counts as this one (and is replaced by it).
   */
  async seed(fingerprint: string, state: StoredState, previous?: string): Promise<0 | 1 | 2> {
    const r = await SEED.run(this.redis, [this.key], [fingerprint, JSON.stringify(state), previous ?? '']);
    return r === 1 ? 1 : r === 2 ? 2 : 0;
  }

  /** Marks the chain undecryptable: true only for the first caller (who tells), false when marked already or gone. */
  async markUndecryptable(mark: UndecryptableMark): Promise<boolean> {
    return Number(await MARK.run(this.redis, [this.key], [JSON.stringify(mark)])) === 1;
  }

  /** Clears the mark (the chain decrypts again): true only for the caller that cleared it. */
  async clearUndecryptable(): Promise<boolean> {
    return (await this.redis.hdel(this.key, 'undecryptable')) === 1;
  }

  /** Commits `state` as version `expected + 1` if `owner` holds the lock and nobody wrote since `expected`. */
  async commit(expected: number, owner: string, state: StoredState): Promise<CommitResult> {
    if (owner === '') throw new Error('commit needs the lock owner (commitAt lands a rotation without it)');
    return this.write(expected, owner, state);
  }

  private async write(expected: number, owner: string, state: StoredState): Promise<CommitResult> {
    const r = Number(await COMMIT.run(this.redis, [this.key, this.lockKey], [owner, String(expected), JSON.stringify(state)]));
    if (r === -1) return { ok: false, why: 'lock-lost' };
    if (r === -2) return { ok: false, why: 'version-moved' };
    return { ok: true, version: r };
  }

  /**
   * Starts the chain again from a code exchange (its first link), while `owner` holds the refresh lock: `marker`
   * becomes the seed, and `fileSeed` (the tenants file's token's fingerprint, when it has one) counts as seen.
   */
  async connect(owner: string, marker: string, fileSeed: string | undefined, state: StoredState): Promise<CommitResult> {
    const r = Number(await CONNECT.run(this.redis, [this.key, this.lockKey], [owner, marker, fileSeed ?? '', JSON.stringify(state)]));
    return r === -1 ? { ok: false, why: 'lock-lost' } : { ok: true, version: r };
  }

  /** Deletes the chain (connect revoke); the caller holds the refresh lock. */
  async remove(): Promise<void> {
    await this.redis.del(this.key);
  }

  /**
   * Commits `state` as version `expected + 1` if nobody wrote since `expected`, lock or not. Only for landing a
   * rotation the platform already made from the refresh token stored at `expected`: no other process can hold a
   * newer token of that chain, so no lock is needed to keep it.
   */
  async commitAt(expected: number, state: StoredState): Promise<CommitResult> {
    return this.write(expected, '', state);
  }
}

/** Xero's token store: `<base>:xero:{<xeroTenantId>}:oauth` (the key names Xero tokens always had). */
export class XeroTokenStore extends PlatformTokenStore {
  constructor(redis: Redis, prefix: string, connection: string) {
    super(redis, prefix, 'xero', connection);
  }
}

function parseMark(text: string): UndecryptableMark | undefined {
  try {
    const r = markSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
