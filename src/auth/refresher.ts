import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Secret } from '../secret.js';
import type { Logger } from '../logger.js';
import { RedisLock } from '../redis/lock.js';
import { isCredentialsRejected } from './errors.js';
import { authClientKey } from './keys.js';
import type { AuthMetrics, RotationReason } from './metrics.js';
import type { RefreshRequest } from './refresh-request.js';
import { tokenPlan, type AuthSettings, type TokenPlan } from './settings.js';
import { ClientAuthStore, type AuthState, type TokenBox } from './token-store.js';
import type { AuthWakeups, WakeKind } from './wakeups.js';

/** Where and how to ask for a client's token (from the tenants file in memory; never from job data). */
export interface ClientCredentials {
  clientId: string;
  clientSecret: Secret;
  authUrl: string;
}

/** The one call to the token endpoint (src/collections/token.ts's `requestToken` in production). */
export type RequestTokenFn = (o: {
  authUrl: string;
  clientId: string;
  clientSecret: Secret;
  timeoutMs?: number;
}) => Promise<{ accessToken: string; expiresAtMs?: number }>;

export interface RotateOptions {
  reason: RotationReason;
  /**
   * For '401': the version that was refused; for a planned 'scheduled' check: the version whose margin it was
   * planned for. Nothing is done if the stored version moved on.
   */
  seenVersion?: number;
  /** Whose credentials these are: with it, a rotation plans the check of the new token's margin. */
  tenantId?: string;
}

export type RotateOutcome =
  | { outcome: 'rotated'; version: number; expiresAt: number }
  | { outcome: 'skipped'; why: 'fresh' | 'already-rotated' | 'has-token' | 'lost-race' | 'no-token'; version: number }
  | { outcome: 'cooldown'; nextAttemptAt: number; failures: number }
  | { outcome: 'rejected'; failures: number; nextAttemptAt: number };

export interface RefresherHooks {
  /** Test hook: runs with the gate closed and the leases drained, just before the token call. */
  beforeTokenCall?: (clientKey: string) => Promise<void>;
}

export interface TokenRefresherDeps {
  redis: Redis;
  prefix: string;
  wakeups: AuthWakeups;
  settings: AuthSettings;
  logger: Logger;
  requestToken: RequestTokenFn;
  metrics: AuthMetrics;
  hooks?: RefresherHooks;
  /** The keyed fingerprint of a client's credentials (secretFingerprint under the deployment's key). */
  fingerprint: (clientId: string, secret: Secret) => string;
  /** Enqueues a 'scheduled' check to run in `delayMs` (the planned check of a token's margin). */
  planCheck?: (request: RefreshRequest, delayMs: number) => Promise<unknown>;
  /** Seals the stored token (PLATFORM_TOKEN_KEY); absent: stored in plain text. */
  tokenBox?: TokenBox;
}

/** A planned check runs at its token's margin or a little after; this much early still counts as due. */
const PLAN_SLACK_MS = 25;

/**
 * Rotates a client's token under the protocol (docs/architecture.md, "Tokens"): lock, re-read, close the
 * gate, drain the leases (bounded), re-check the lock, call the token endpoint, store with a fenced
 * compare-and-set that also opens the gate and wakes the waiters, release the lock. The only caller of the
 * token endpoint.
 */
export class TokenRefresher {
  readonly #d: TokenRefresherDeps;
  readonly #log: Logger;

  constructor(deps: TokenRefresherDeps) {
    this.#d = deps;
    this.#log = deps.logger.child({ component: 'token-refresher' });
  }

  async rotate(clientKey: string, credentials: ClientCredentials, opts: RotateOptions): Promise<RotateOutcome> {
    const { settings } = this.#d;
    if (authClientKey(credentials.authUrl, credentials.clientId) !== clientKey) {
      throw new Error(`credentials of client "${credentials.clientId}" at ${credentials.authUrl} given for another client key (${clientKey})`);
    }
    const store = new ClientAuthStore(this.#d.redis, this.#d.prefix, clientKey, this.#d.tokenBox);
    const fingerprint = this.#d.fingerprint(credentials.clientId, credentials.clientSecret);

    const before = await store.state();
    const held = cooldownOf(before, fingerprint);
    if (held) return held;
    if (this.#needless(before, opts) !== null) return this.#skip(before, opts);

    const lock = new RedisLock(this.#d.redis, store.keys.lock, settings.lockTtlMs, randomUUID());
    if (!(await lock.acquireWithin(settings.lockTtlMs + settings.pollMs, 50))) {
      throw new Error(`refresh lock of client "${clientKey}" still held after ${settings.lockTtlMs} ms`);
    }
    const owner = lock.owner;
    try {
      // Another process may have rotated (or failed) while we waited for the lock (Nango PR #2494).
      const state = await store.state();
      const stateReadAt = Date.now();
      const held2 = cooldownOf(state, fingerprint);
      if (held2) return held2;
      if (this.#needless(state, opts) !== null) return this.#skip(state, opts);

      await this.#d.wakeups.ensure(store.keys.channel);
      const generation = this.#d.wakeups.generation(store.keys.channel, RELEASED);
      const inFlight = await store.closeGate(owner, settings.gateTtlMs);
      const drained = await this.#drain(store, inFlight, generation);
      await this.#d.hooks?.beforeTokenCall?.(clientKey);

      // Ownership re-check and a lifetime that outlasts the call, in one step.
      if (!(await lock.extend(settings.tokenCallTimeoutMs + settings.lockSlackMs))) {
        await store.openGate(owner);
        throw new Error(`refresh lock of client "${clientKey}" lost before the token call`);
      }
      const startedAt = Date.now();
      let issued: { accessToken: string; expiresAtMs?: number };
      try {
        issued = await this.#d.requestToken({
          authUrl: credentials.authUrl,
          clientId: credentials.clientId,
          clientSecret: credentials.clientSecret,
          timeoutMs: settings.tokenCallTimeoutMs,
        });
      } catch (err) {
        if (isCredentialsRejected(err)) {
          const f = await store.recordFailure(owner, 'the token endpoint refused the client credentials', fingerprint, settings.cooldownBaseMs, settings.cooldownMaxMs);
          this.#log.error({ clientKey, clientId: credentials.clientId, failures: f.failures, nextAttemptAt: new Date(f.nextAttemptAt).toISOString() }, 'auth: credentials rejected; token requests held (fix the secret in the tenants file)');
          return { outcome: 'rejected', failures: f.failures, nextAttemptAt: f.nextAttemptAt };
        }
        await store.openGate(owner);
        throw err;
      }
      const expiresAt = issued.expiresAtMs ?? startedAt + settings.lifetimeMs;
      // The plan follows the token held: its own lifetime, measured on Redis's clock (issuedAt is Redis's now).
      const redisNow = state.now + (Date.now() - stateReadAt);
      const plan = tokenPlan(settings, expiresAt - redisNow);
      const stored = await store.store(owner, state.version, issued.accessToken, expiresAt, plan);
      if (!stored.ok) {
        // The token we just got has superseded the stored one: the next 401 rotates again (compare-and-refresh).
        this.#log.warn({ clientKey, why: stored.why }, 'auth: new token not stored (fenced); a later rotation repairs it');
        return { outcome: 'skipped', why: 'lost-race', version: state.version };
      }
      this.#d.metrics.rotation(clientKey, opts.reason);
      this.#log.info(
        { clientKey, clientId: credentials.clientId, reason: opts.reason, version: stored.version, drained, expiresInMs: expiresAt - stored.now, marginMs: plan.marginMs, leaseFloorMs: plan.leaseFloorMs },
        'auth: token rotated',
      );
      await this.#planCheck(clientKey, opts.tenantId, stored.version, expiresAt - plan.marginMs - stored.now);
      return { outcome: 'rotated', version: stored.version, expiresAt };
    } finally {
      await lock.release().catch((err: unknown) => this.#log.warn({ err, clientKey }, 'auth: could not release the refresh lock'));
    }
  }

  /** The next check of this token, at its margin (on a refresh job; the backstop scheduler covers a lost one). */
  async #planCheck(clientKey: string, tenantId: string | undefined, version: number, delayMs: number): Promise<void> {
    if (tenantId === undefined || !this.#d.planCheck) return;
    try {
      await this.#d.planCheck({ clientKey, tenantId, reason: 'scheduled', seenVersion: version }, Math.max(0, Math.floor(delayMs)));
    } catch (err) {
      this.#log.warn({ err, clientKey, version }, 'auth: could not plan the next check; the backstop schedule and on-demand rotations remain');
    }
  }

  /** Why no rotation is needed, or null when one is. */
  #needless(s: AuthState, opts: RotateOptions): 'fresh' | 'has-token' | 'version-moved' | 'no-token' | null {
    const plan = this.#plan(s);
    // A token within its lease floor can no longer be leased: as good as missing.
    const usable = s.hasToken && s.expiresAt !== null && s.expiresAt - plan.leaseFloorMs > s.now;
    switch (opts.reason) {
      case 'manual':
        return null;
      case 'missing':
        return usable ? 'has-token' : null;
      case '401':
        if (opts.seenVersion !== undefined && s.version !== opts.seenVersion) return 'version-moved';
        return null;
      case 'scheduled': {
        if (opts.seenVersion !== undefined && s.version !== opts.seenVersion) return 'version-moved';
        // No token was ever stored (or its state was dropped): nothing to keep fresh. Its first request asks for one
        // ('missing'); a backstop check fetching it ahead put 10,000 rotations in the queue at a start, before the
        // runs' own requests.
        if (!s.hasToken && s.version === 0) return 'no-token';
        if (!usable || s.expiresAt === null) return null;
        return s.expiresAt - s.now > plan.marginMs + PLAN_SLACK_MS ? 'fresh' : null;
      }
    }
  }

  /** The stored token's plan, or (a token stored without one) the plan of its lifetime. */
  #plan(s: AuthState): TokenPlan {
    if (s.marginMs !== null && s.leaseFloorMs !== null) return { marginMs: s.marginMs, leaseFloorMs: s.leaseFloorMs };
    const lifetime = s.issuedAt !== null && s.expiresAt !== null && s.expiresAt > s.issuedAt ? s.expiresAt - s.issuedAt : this.#d.settings.lifetimeMs;
    return tokenPlan(this.#d.settings, lifetime);
  }

  #skip(s: AuthState, opts: RotateOptions): RotateOutcome {
    const why = this.#needless(s, opts);
    return { outcome: 'skipped', why: why === 'fresh' || why === 'has-token' || why === 'no-token' ? why : 'already-rotated', version: s.version };
  }

  /** Waits until no lease is held or the drain bound passes; returns whether it drained. */
  async #drain(store: ClientAuthStore, inFlight: number, generation: number): Promise<boolean> {
    const { settings, wakeups } = this.#d;
    const deadline = Date.now() + settings.drainBoundMs;
    const channel = store.keys.channel;
    let count = inFlight;
    let gen = generation;
    while (count > 0) {
      const left = deadline - Date.now();
      if (left <= 0) {
        this.#log.warn({ clientKey: store.clientKey, leases: count, drainBoundMs: settings.drainBoundMs }, 'auth: drain bound reached; rotating anyway');
        return false;
      }
      await wakeups.wait(channel, RELEASED, Math.min(left, settings.pollMs, 100), undefined, gen);
      gen = wakeups.generation(channel, RELEASED);
      count = await store.leaseCount();
    }
    return true;
  }
}

const RELEASED: readonly WakeKind[] = ['released'];

function cooldownOf(s: AuthState, fingerprint: string): RotateOutcome | null {
  const f = s.failure;
  if (f && f.secretFingerprint === fingerprint && f.nextAttemptAt > s.now) {
    return { outcome: 'cooldown', nextAttemptAt: f.nextAttemptAt, failures: f.failures };
  }
  return null;
}
