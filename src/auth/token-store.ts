import type { Redis } from 'ioredis';
import { z } from 'zod';
import { authKeys, type AuthKeys } from './keys.js';
import { ACQUIRE, CLOSE_GATE, LEASE_COUNT, OPEN_GATE, RECORD_FAILURE, RELEASE, RENEW, STATE, STORE } from './scripts.js';

/**
 * Encryption at rest of the stored token (decision 0121): the platform tokens' cipher (TokenCipher under
 * PLATFORM_TOKEN_KEY), handed in by the composition root (auth imports no platform code). Without one, the token is
 * stored as it came, as before.
 */
export interface TokenBox {
  encrypt(plain: string, context: string): string;
  /** Throws when the value was not made under this key for this context. */
  decrypt(box: string, context: string): string;
}

/** Marks an encrypted token in Redis; a value without it is a token stored in plain text (before a key was set). */
export const SEALED_PREFIX = 'sealed:';

/** A client's failure state: the token endpoint refused its credentials. */
export interface AuthFailure {
  reason: string;
  failures: number;
  /** No token request before this time (ms since epoch), unless the secret changes. */
  nextAttemptAt: number;
  secretFingerprint: string;
}

/** What `status` shows (never the token). */
export interface AuthStatus {
  clientKey: string;
  hasToken: boolean;
  version: number;
  issuedAt: number | null;
  expiresAt: number | null;
  gateClosed: boolean;
  /** Leases in flight (requests holding the current token). */
  leases: number;
  failure?: Omit<AuthFailure, 'secretFingerprint'>;
}

/** One read of a client's state, with Redis's clock. */
export interface AuthState {
  now: number;
  hasToken: boolean;
  /** 0 when no token was ever stored. */
  version: number;
  issuedAt: number | null;
  expiresAt: number | null;
  gateTtlMs: number | null;
  leases: number;
  failure: AuthFailure | null;
  /** The stored token's plan (null for a token stored without one): rotate this long before expiry... */
  marginMs: number | null;
  /** ...and lease it no more once this little of its life is left. */
  leaseFloorMs: number | null;
}

export type AcquireResult =
  | { kind: 'ok'; token: string; version: number }
  | { kind: 'gate' | 'limit' | 'missing' }
  /** The stored token (of `version`) cannot be read with this process's key (another key, or none): rotate it. */
  | { kind: 'unreadable'; version: number }
  | { kind: 'failed'; reason: string; failures: number; nextAttemptAt: number };

/** Leases taken in one step (a lease pool's fill), with the token's terms on Redis's clock. */
export type AcquireManyResult =
  | { kind: 'ok'; token: string; version: number; leaseIds: string[]; now: number; expiresAt: number; leaseFloorMs: number }
  | Exclude<AcquireResult, { kind: 'ok' }>;

/** A renewal of a pool's leases: until when they may be handed out, and which had expired already. */
export type RenewResult = { kind: 'ok'; now: number; expiresAt: number; leaseFloorMs: number; lost: string[] } | { kind: 'gate' | 'stale' };

const intText = z.string().regex(/^-?\d+$/).transform(Number);
const optInt = z.union([z.literal('').transform(() => null), intText]);
const acquireReply = z.union([
  z.tuple([z.literal('ok'), z.string(), intText, z.number().int().positive(), z.number().int(), z.number().int(), z.number().int()]),
  z.tuple([z.enum(['gate', 'limit', 'missing'])]),
  z.tuple([z.literal('failed'), z.string(), intText, intText]),
]);
const stateReply = z.tuple([intText, optInt, optInt, optInt, intText, intText, intText, z.string(), optInt, optInt, z.string(), optInt, optInt]);
const storeReply = z.union([z.tuple([z.number().int().positive(), z.number().int()]), z.tuple([z.literal(-1)]), z.tuple([z.literal(-2), z.string()])]);
const failureReply = z.tuple([z.number().int(), z.number().int()]);
const count = z.number().int().min(0);
const renewReply = z.union([
  z.tuple([z.literal('ok'), z.number().int(), z.number().int(), z.number().int()]).rest(z.string()),
  z.tuple([z.enum(['gate', 'stale'])]),
]);

/** Typed access to one client's protocol keys. Every method is one round trip. */
export class ClientAuthStore {
  readonly keys: AuthKeys;
  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly clientKey: string,
    private readonly box?: TokenBox,
  ) {
    this.keys = authKeys(prefix, clientKey);
  }

  /** What the token is bound to (GCM's additional data): a value copied to another client's key does not decrypt. */
  get #context(): string {
    return `collections-sync service token ${this.clientKey}`;
  }

  /** The value to store: sealed under the key when there is one. */
  #seal(token: string): string {
    return this.box ? SEALED_PREFIX + this.box.encrypt(token, this.#context) : token;
  }

  /** The stored value's token, or undefined when this process cannot read it; a plain-text value is taken as it is. */
  #open(stored: string): string | undefined {
    if (!stored.startsWith(SEALED_PREFIX)) return stored;
    if (!this.box) return undefined;
    try {
      return this.box.decrypt(stored.slice(SEALED_PREFIX.length), this.#context);
    } catch {
      return undefined;
    }
  }

  async acquire(leaseId: string, leaseTtlMs: number, limit: number, fingerprint: string): Promise<AcquireResult> {
    const r = await this.acquireMany(leaseId, 1, 1, leaseTtlMs, limit, fingerprint);
    return r.kind === 'ok' ? { kind: 'ok', token: r.token, version: r.version } : r;
  }

  /**
   * Takes up to `want` leases in one step (ids `${idBase}.1`.. when more than one, else `idBase`), as many as the
   * in-flight limit leaves; fewer than `need` marks a waiter and tells the pools ('limited').
   */
  async acquireMany(idBase: string, want: number, need: number, leaseTtlMs: number, limit: number, fingerprint: string): Promise<AcquireManyResult> {
    const k = this.keys;
    const args = want === 1 && need === 1 ? [idBase, leaseTtlMs, limit, fingerprint] : [idBase, leaseTtlMs, limit, fingerprint, want, need, k.channel];
    const r = acquireReply.parse(await ACQUIRE.run(this.redis, [k.token, k.gate, k.leases, k.limitWait, k.failure], args));
    switch (r[0]) {
      case 'ok': {
        const leaseIds = want === 1 ? [idBase] : Array.from({ length: r[3] }, (_, i) => `${idBase}.${i + 1}`);
        const token = this.#open(r[1]);
        if (token === undefined) {
          // Leases on a token nobody here can send are given back at once; the caller asks for its rotation.
          await this.release(...leaseIds);
          return { kind: 'unreadable', version: r[2] };
        }
        return { kind: 'ok', token, version: r[2], leaseIds, now: r[4], expiresAt: r[5], leaseFloorMs: r[6] };
      }
      case 'failed':
        return { kind: 'failed', reason: r[1], failures: r[2], nextAttemptAt: r[3] };
      default:
        return { kind: r[0] };
    }
  }

  /** Releases leases in one step (publishes 'released' when a rotation drains or a waiter is under the limit). */
  async release(...leaseIds: string[]): Promise<void> {
    if (leaseIds.length === 0) return;
    const k = this.keys;
    await RELEASE.run(this.redis, [k.leases, k.gate, k.limitWait], [k.channel, ...leaseIds]);
  }

  /** Renews `renew` (a pool's leases of token `version`) to live `leaseTtlMs` more, and releases `release`. */
  async renew(renew: readonly string[], release: readonly string[], leaseTtlMs: number, version: number): Promise<RenewResult> {
    const k = this.keys;
    const raw = await RENEW.run(this.redis, [k.token, k.gate, k.leases, k.limitWait], [leaseTtlMs, version, k.channel, renew.length, ...renew, ...release]);
    const r = renewReply.parse(raw);
    if (r[0] !== 'ok') return { kind: r[0] };
    const [, now, expiresAt, leaseFloorMs, ...lost] = r;
    return { kind: 'ok', now, expiresAt, leaseFloorMs, lost };
  }

  async state(): Promise<AuthState> {
    const k = this.keys;
    const r = stateReply.parse(await STATE.run(this.redis, [k.token, k.gate, k.leases, k.failure], []));
    const [now, version, issuedAt, expiresAt, has, gatePttl, leases, fReason, fFailures, fNext, fFp, marginMs, leaseFloorMs] = r;
    return {
      now,
      hasToken: has === 1,
      version: version ?? 0,
      issuedAt,
      expiresAt,
      gateTtlMs: gatePttl > 0 ? gatePttl : null,
      leases,
      failure:
        fNext === null ? null : { reason: fReason, failures: fFailures ?? 1, nextAttemptAt: fNext, secretFingerprint: fFp },
      marginMs,
      leaseFloorMs,
    };
  }

  async status(): Promise<AuthStatus> {
    const s = await this.state();
    const status: AuthStatus = {
      clientKey: this.clientKey,
      hasToken: s.hasToken,
      version: s.version,
      issuedAt: s.issuedAt,
      expiresAt: s.expiresAt,
      gateClosed: s.gateTtlMs !== null,
      leases: s.leases,
    };
    if (s.failure) status.failure = { reason: s.failure.reason, failures: s.failure.failures, nextAttemptAt: s.failure.nextAttemptAt };
    return status;
  }

  /** Closes the gate for `ttlMs`; returns the leases in flight. */
  async closeGate(owner: string, ttlMs: number): Promise<number> {
    return count.parse(await CLOSE_GATE.run(this.redis, [this.keys.gate, this.keys.leases], [owner, ttlMs, this.keys.channel]));
  }

  async leaseCount(): Promise<number> {
    return count.parse(await LEASE_COUNT.run(this.redis, [this.keys.leases], []));
  }

  /** Opens the gate if `owner` closed it (and wakes the waiters). */
  async openGate(owner: string): Promise<boolean> {
    return (await OPEN_GATE.run(this.redis, [this.keys.gate], [owner, this.keys.channel])) === 1;
  }

  /**
   * Stores a new token with its plan (`marginMs`, `leaseFloorMs`: see tokenPlan) if `owner` still holds the lock
   * and the version is still `expectedVersion` (0 = none); opens the gate and wakes the waiters either way.
   * `now` is Redis's clock at the store (the token's `issuedAt`).
   */
  async store(
    owner: string,
    expectedVersion: number,
    token: string,
    expiresAt: number,
    plan: { marginMs: number; leaseFloorMs: number } = { marginMs: 0, leaseFloorMs: 0 },
  ): Promise<{ ok: true; version: number; now: number } | { ok: false; why: 'lock-lost' | 'version-moved' }> {
    const k = this.keys;
    const expected = expectedVersion === 0 ? '' : String(expectedVersion);
    const args = [owner, expected, this.#seal(token), expiresAt, k.channel, Math.floor(plan.marginMs), Math.floor(plan.leaseFloorMs)];
    const r = storeReply.parse(await STORE.run(this.redis, [k.token, k.lock, k.gate, k.failure], args));
    if (r[0] > 0 && typeof r[1] === 'number') return { ok: true, version: r[0], now: r[1] };
    return { ok: false, why: r[0] === -1 ? 'lock-lost' : 'version-moved' };
  }

  async recordFailure(
    owner: string,
    reason: string,
    fingerprint: string,
    cooldownBaseMs: number,
    cooldownMaxMs: number,
  ): Promise<{ failures: number; nextAttemptAt: number }> {
    const k = this.keys;
    const raw = await RECORD_FAILURE.run(this.redis, [k.failure, k.gate], [owner, reason, fingerprint, cooldownBaseMs, cooldownMaxMs, k.channel]);
    const [failures, nextAttemptAt] = failureReply.parse(raw);
    return { failures, nextAttemptAt };
  }
}
