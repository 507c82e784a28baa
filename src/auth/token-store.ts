import type { Redis } from 'ioredis';
import { z } from 'zod';
import { authKeys, type AuthKeys } from './keys.js';
import { ACQUIRE, CLOSE_GATE, LEASE_COUNT, OPEN_GATE, RECORD_FAILURE, RELEASE, STATE, STORE } from './scripts.js';

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
  | { kind: 'failed'; reason: string; failures: number; nextAttemptAt: number };

const intText = z.string().regex(/^-?\d+$/).transform(Number);
const optInt = z.union([z.literal('').transform(() => null), intText]);
const acquireReply = z.union([
  z.tuple([z.literal('ok'), z.string(), intText]),
  z.tuple([z.enum(['gate', 'limit', 'missing'])]),
  z.tuple([z.literal('failed'), z.string(), intText, intText]),
]);
const stateReply = z.tuple([intText, optInt, optInt, optInt, intText, intText, intText, z.string(), optInt, optInt, z.string(), optInt, optInt]);
const storeReply = z.union([z.tuple([z.number().int().positive(), z.number().int()]), z.tuple([z.literal(-1)]), z.tuple([z.literal(-2), z.string()])]);
const failureReply = z.tuple([z.number().int(), z.number().int()]);
const count = z.number().int().min(0);

/** Typed access to one client's protocol keys. Every method is one round trip. */
export class ClientAuthStore {
  readonly keys: AuthKeys;
  constructor(
    private readonly redis: Redis,
    prefix: string,
    readonly clientKey: string,
  ) {
    this.keys = authKeys(prefix, clientKey);
  }

  async acquire(leaseId: string, leaseTtlMs: number, limit: number, fingerprint: string): Promise<AcquireResult> {
    const k = this.keys;
    const raw = await ACQUIRE.run(this.redis, [k.token, k.gate, k.leases, k.limitWait, k.failure], [leaseId, leaseTtlMs, limit, fingerprint]);
    const r = acquireReply.parse(raw);
    switch (r[0]) {
      case 'ok':
        return { kind: 'ok', token: r[1], version: r[2] };
      case 'failed':
        return { kind: 'failed', reason: r[1], failures: r[2], nextAttemptAt: r[3] };
      default:
        return { kind: r[0] };
    }
  }

  async release(leaseId: string): Promise<void> {
    const k = this.keys;
    await RELEASE.run(this.redis, [k.leases, k.gate, k.limitWait], [leaseId, k.channel]);
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
    return count.parse(await CLOSE_GATE.run(this.redis, [this.keys.gate, this.keys.leases], [owner, ttlMs]));
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
    const args = [owner, expected, token, expiresAt, k.channel, Math.floor(plan.marginMs), Math.floor(plan.leaseFloorMs)];
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
