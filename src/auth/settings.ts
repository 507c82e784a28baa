import { z } from 'zod';

/**
 * Tunables of the token protocol. Every bound the protocol promises is derived from these:
 * - a lease lives `requestTimeoutMs` (a request that outlives it no longer holds back a rotation); a pooled lease
 *   (taken ahead by a process's lease pool) is handed out for at most `leaseHoldMs` after it was taken or renewed
 *   and lives `requestTimeoutMs` beyond that;
 * - the refresher waits at most `drainBoundMs` (default `requestTimeoutMs + leaseHoldMs`) for leases before
 *   rotating anyway, so a request handed a pooled lease just before the gate closed (its process not told yet)
 *   still ends within the drain;
 * - the gate lives `drainBoundMs + tokenCallTimeoutMs + 500` (the 500 ms for storing the new token), so a
 *   refresher that dies with the gate closed stalls nobody for longer than that;
 * - the refresh lock lives a little longer than the gate (`lockSlackMs`).
 * How each token is used follows the token actually held (its `exp`), not the configured lifetime: see tokenPlan.
 */
export const authSettingsSchema = z
  .object({
    /** Upper bound of one request to the service (one attempt): the lease's time to live. */
    requestTimeoutMs: z.number().int().min(50).default(20_000),
    /**
     * How long a process's lease pool may hand out a lease after taking or renewing it (0: no pool, one lease
     * script per request and one per release). Default: a quarter of requestTimeoutMs, at most 1 s.
     */
    leaseHoldMs: z.number().int().min(0).optional(),
    /** How long a rotation waits for requests in flight before it rotates anyway (default: requestTimeoutMs + leaseHoldMs). */
    drainBoundMs: z.number().int().min(0).optional(),
    /** Timeout of the token endpoint call. */
    tokenCallTimeoutMs: z.number().int().min(50).default(10_000),
    /** Extra lock lifetime beyond the gate's, for storing the new token. */
    lockSlackMs: z.number().int().min(100).default(2_000),
    /** Token lifetime when the token carries no `exp` claim (and the period of the backstop check, below). */
    lifetimeMs: z.number().int().min(100).default(300_000),
    /** Rotate when this fraction of the token's lifetime is left. */
    marginFraction: z.number().gt(0).lt(1).default(0.2),
    /**
     * Period of the per-client backstop check (default: half the margin of `lifetimeMs`; the app passes
     * TOKEN_CHECK_EVERY_S, decision 0250). Each rotation also plans the next check for its own token's margin, so a
     * token shorter than `lifetimeMs` is still rotated in time.
     */
    scheduleEveryMs: z.number().int().min(50).optional(),
    /** Requests in flight per client across all processes, unless the tenant sets its own. */
    inFlightLimit: z.number().int().min(1).default(32),
    /** First cooldown after the token endpoint refuses the credentials; doubles per failure up to the max. */
    cooldownBaseMs: z.number().int().min(10).default(30_000),
    cooldownMaxMs: z.number().int().min(10).default(1_800_000),
    /** Polling period of every wait (the fallback when a pub/sub message is missed). */
    pollMs: z.number().int().min(10).default(200),
    /** Longest an `acquire()` waits at the gate, for a token or under the in-flight limit (default: derived). */
    acquireTimeoutMs: z.number().int().min(100).optional(),
  })
  .strict();

/** The default lease hold at most (production: 20 s requests, so 1 s). */
const MAX_DEFAULT_HOLD_MS = 1_000;

/** Time the gate allows, beyond the drain and the token call, for storing the new token. */
const GATE_STORE_SLACK_MS = 500;

export type AuthSettingsInput = z.input<typeof authSettingsSchema>;

export interface AuthSettings {
  readonly requestTimeoutMs: number;
  readonly leaseHoldMs: number;
  readonly drainBoundMs: number;
  readonly tokenCallTimeoutMs: number;
  readonly gateTtlMs: number;
  readonly lockTtlMs: number;
  readonly lockSlackMs: number;
  readonly lifetimeMs: number;
  readonly marginFraction: number;
  readonly scheduleEveryMs: number;
  readonly inFlightLimit: number;
  readonly cooldownBaseMs: number;
  readonly cooldownMaxMs: number;
  readonly pollMs: number;
  readonly acquireTimeoutMs: number;
}

/** Validates the settings and fills in the derived bounds. */
export function resolveAuthSettings(input: AuthSettingsInput = {}): AuthSettings {
  const s = authSettingsSchema.parse(input);
  const leaseHoldMs = s.leaseHoldMs ?? Math.min(MAX_DEFAULT_HOLD_MS, Math.floor(s.requestTimeoutMs / 4));
  const drainBoundMs = s.drainBoundMs ?? s.requestTimeoutMs + leaseHoldMs;
  const gateTtlMs = drainBoundMs + s.tokenCallTimeoutMs + GATE_STORE_SLACK_MS;
  const lockTtlMs = gateTtlMs + s.lockSlackMs;
  return Object.freeze({
    requestTimeoutMs: s.requestTimeoutMs,
    leaseHoldMs,
    drainBoundMs,
    tokenCallTimeoutMs: s.tokenCallTimeoutMs,
    gateTtlMs,
    lockTtlMs,
    lockSlackMs: s.lockSlackMs,
    lifetimeMs: s.lifetimeMs,
    marginFraction: s.marginFraction,
    scheduleEveryMs: s.scheduleEveryMs ?? Math.max(50, Math.floor((s.lifetimeMs * s.marginFraction) / 2)),
    inFlightLimit: s.inFlightLimit,
    cooldownBaseMs: s.cooldownBaseMs,
    cooldownMaxMs: Math.max(s.cooldownMaxMs, s.cooldownBaseMs),
    pollMs: s.pollMs,
    // A waiter may sit behind a lock holder (lockTtl) and then a whole rotation (lockTtl) of its own.
    acquireTimeoutMs: s.acquireTimeoutMs ?? 2 * lockTtlMs + s.requestTimeoutMs,
  });
}

/** No token is rotated less than this long before its expiry (unless it lives less than twice as long). */
export const MIN_MARGIN_MS = 500;

/** How one token is used, from its own lifetime (its `exp` minus the time it was stored). */
export interface TokenPlan {
  /** Rotate when this little of its life is left (the next check is planned for then). */
  readonly marginMs: number;
  /**
   * Lease it no more once this little of its life is left: the request timeout (a request leased may run that
   * long), but at most half the margin, so a rotation on time always comes first.
   */
  readonly leaseFloorMs: number;
}

/**
 * The plan of a token that lives `lifetimeMs`: the margin is `marginFraction` of the lifetime, at least
 * MIN_MARGIN_MS and at most half the lifetime; the lease floor is `requestTimeoutMs`, at most half the margin.
 */
export function tokenPlan(settings: Pick<AuthSettings, 'marginFraction' | 'requestTimeoutMs'>, lifetimeMs: number): TokenPlan {
  const life = Math.max(0, lifetimeMs);
  const marginMs = Math.floor(Math.min(Math.max(life * settings.marginFraction, MIN_MARGIN_MS), life / 2));
  return { marginMs, leaseFloorMs: Math.min(settings.requestTimeoutMs, Math.floor(marginMs / 2)) };
}
