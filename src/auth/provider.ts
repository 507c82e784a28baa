import { randomBytes } from 'node:crypto';
import type { AuthRejectReason, TokenLease, TokenProvider } from '../collections/token-provider.js';
import { AbortedError } from '../collections/errors.js';
import { TOKEN_ROUTE } from '../collections/token.js';
import type { Logger } from '../logger.js';
import { CredentialsRejectedError, noTokenWithin } from './errors.js';
import { LeasePool, type PooledLease } from './lease-pool.js';
import type { AuthMetrics } from './metrics.js';
import type { RefreshRequest } from './refresh-request.js';
import type { AuthSettings } from './settings.js';
import type { ClientAuthStore } from './token-store.js';
import type { AuthWakeups, WakeKind } from './wakeups.js';

export interface RedisTokenProviderDeps {
  store: ClientAuthStore;
  wakeups: AuthWakeups;
  settings: AuthSettings;
  metrics: AuthMetrics;
  logger: Logger;
  /** Asks for a rotation (a deduplicated refresh-token job). */
  requestRefresh: (request: RefreshRequest) => Promise<unknown>;
  tenantId: string;
  /** The service's client id (for messages: the store's client key is a digest of it and the auth URL). */
  clientId: string;
  /** Fingerprint of the secret this tenant's config holds: a failure recorded for another secret does not block. */
  fingerprint: string;
  /** Requests in flight for this client across all processes. */
  inFlightLimit: number;
}

const GATE_KINDS: readonly WakeKind[] = ['opened', 'rotated', 'failed'];
const LIMIT_KINDS: readonly WakeKind[] = ['released', 'opened', 'rotated', 'failed'];
/** Don't ask for the same on-demand rotation more often than this, per provider. */
const ASK_AGAIN_MS = 1_000;

let leaseSeq = 0;
const processTag = randomBytes(4).toString('hex');

/**
 * The Redis-backed TokenProvider of one client (docs/architecture.md, "Tokens"). A Lua script takes leases on
 * the current token, unless the gate is closed, there is no token, or the in-flight limit is reached. With a
 * lease hold (the default), leases come from the process's lease pool (lease-pool.ts): taken and returned in
 * batches, so the steady state costs no round trip per request; without one (`leaseHoldMs` 0), one round trip to
 * acquire and one to release. Waits end on a pub/sub message of the client's channel, with polling as the fallback.
 */
export class RedisTokenProvider implements TokenProvider {
  readonly #d: RedisTokenProviderDeps;
  readonly #clientKey: string;
  readonly #lastAsk = new Map<string, number>();
  readonly #pool: LeasePool | null;

  constructor(deps: RedisTokenProviderDeps) {
    this.#d = deps;
    this.#clientKey = deps.store.clientKey;
    this.#pool =
      deps.settings.leaseHoldMs > 0
        ? new LeasePool({ store: deps.store, wakeups: deps.wakeups, settings: deps.settings, logger: deps.logger, inFlightLimit: deps.inFlightLimit, fingerprint: deps.fingerprint })
        : null;
  }

  /** A pooled lease at once (no Redis), or null: then `acquire`. */
  tryAcquire(): TokenLease | null {
    const pool = this.#pool;
    const lease = pool?.take();
    return pool && lease ? this.#pooled(pool, lease) : null;
  }

  async acquire(signal?: AbortSignal): Promise<TokenLease> {
    const pool = this.#pool;
    if (pool === null) return this.#acquire(signal, null);
    const lease = pool.take();
    if (lease) return this.#pooled(pool, lease);
    pool.waiting += 1;
    try {
      return await this.#acquire(signal, pool);
    } finally {
      pool.waiting -= 1;
    }
  }

  async #acquire(signal: AbortSignal | undefined, pool: LeasePool | null): Promise<TokenLease> {
    const { store, wakeups, settings } = this.#d;
    const channel = store.keys.channel;
    const leaseId = `${processTag}.${++leaseSeq}`;
    const started = Date.now();
    const deadline = started + settings.acquireTimeoutMs;
    let waited = false;
    for (;;) {
      if (signal?.aborted) throw new AbortedError({ route: TOKEN_ROUTE, cause: signal.reason });
      const idle = pool?.take();
      if (idle) {
        if (waited) this.#d.metrics.gateWaitMs(Date.now() - started);
        return this.#pooled(pool!, idle);
      }
      const gateGeneration = wakeups.generation(channel, GATE_KINDS);
      const limitGeneration = wakeups.generation(channel, LIMIT_KINDS);
      const r = pool ? await pool.fill() : await store.acquire(leaseId, settings.requestTimeoutMs, this.#d.inFlightLimit, this.#d.fingerprint);
      if (r.kind === 'ok') {
        if (waited) this.#d.metrics.gateWaitMs(Date.now() - started);
        if ('lease' in r) {
          if (signal?.aborted) {
            void pool?.giveBack(r.lease);
            throw new AbortedError({ route: TOKEN_ROUTE, cause: signal.reason });
          }
          return this.#pooled(pool!, r.lease);
        }
        return this.#lease(leaseId, r.token, r.version);
      }
      if (r.kind === 'failed') {
        throw new CredentialsRejectedError({ clientKey: this.#clientKey, clientId: this.#d.clientId, tenantId: this.#d.tenantId, failures: r.failures, nextAttemptAt: r.nextAttemptAt, reason: r.reason });
      }
      waited = true;
      if (r.kind === 'missing') await this.#ask({ reason: 'missing' });
      // A token sealed under another key (or stored while none was set, then read without): compare-and-refresh it.
      if (r.kind === 'unreadable') await this.#ask({ reason: '401', seenVersion: r.version });
      if (!wakeups.isReady(channel)) {
        // First wait of this process on this client: subscribe, then look again (a message may have been missed).
        await wakeups.ensure(channel);
        if (wakeups.isReady(channel)) continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw noTokenWithin(this.#d.clientId, Date.now() - started, r.kind === 'limit' ? 'in-flight limit reached' : r.kind === 'gate' ? 'gate closed' : r.kind === 'unreadable' ? 'the stored token cannot be decrypted with PLATFORM_TOKEN_KEY; no rotation yet' : 'no token yet');
      const woke =
        r.kind === 'limit'
          ? await wakeups.wait(channel, LIMIT_KINDS, Math.min(left, settings.pollMs), signal, limitGeneration)
          : await wakeups.wait(channel, GATE_KINDS, Math.min(left, settings.pollMs), signal, gateGeneration);
      if (woke === 'aborted') throw new AbortedError({ route: TOKEN_ROUTE, cause: signal?.reason });
    }
  }

  /**
   * Compare-and-refresh: rotates only if the stored version is still the refused one; otherwise returns at once
   * (the caller acquires the newer token). Waits (bounded) for the version to move.
   */
  async rejected(lease: TokenLease, reason: AuthRejectReason, signal?: AbortSignal): Promise<void> {
    const { store, wakeups, settings } = this.#d;
    this.#d.metrics.unauthorized(reason);
    this.#pool?.refused(lease.version);
    const channel = store.keys.channel;
    const started = Date.now();
    const deadline = started + settings.acquireTimeoutMs;
    let asked = false;
    for (;;) {
      if (signal?.aborted) throw new AbortedError({ route: TOKEN_ROUTE, cause: signal.reason });
      const generation = wakeups.generation(channel, GATE_KINDS);
      const s = await store.state();
      if (s.version !== lease.version) return;
      const f = s.failure;
      if (f && f.nextAttemptAt > s.now && f.secretFingerprint === this.#d.fingerprint) {
        throw new CredentialsRejectedError({ clientKey: this.#clientKey, clientId: this.#d.clientId, tenantId: this.#d.tenantId, failures: f.failures, nextAttemptAt: f.nextAttemptAt, reason: f.reason });
      }
      if (!asked) this.#d.logger.debug({ clientKey: this.#clientKey, reason, version: lease.version }, 'auth: 401 with the current token; asking for a rotation');
      asked = true;
      await this.#ask({ reason: '401', seenVersion: lease.version });
      await wakeups.ensure(channel);
      const left = deadline - Date.now();
      if (left <= 0) throw noTokenWithin(this.#d.clientId, Date.now() - started, `no rotation after a 401 (${reason})`);
      const woke = await wakeups.wait(channel, GATE_KINDS, Math.min(left, settings.pollMs), signal, generation);
      if (woke === 'aborted') throw new AbortedError({ route: TOKEN_ROUTE, cause: signal?.reason });
    }
  }

  #lease(leaseId: string, token: string, version: number): TokenLease {
    const store = this.#d.store;
    let released = false;
    return {
      token,
      version,
      release: async () => {
        if (released) return;
        released = true;
        await store.release(leaseId);
      },
    };
  }

  #pooled(pool: LeasePool, lease: PooledLease): TokenLease {
    let released = false;
    return {
      token: lease.token,
      version: lease.version,
      release: () => {
        if (released) return Promise.resolve();
        released = true;
        return pool.giveBack(lease);
      },
    };
  }

  /** Gives the pool's idle leases back and stops renewing (the others go back as their requests end). */
  async close(): Promise<void> {
    await this.#pool?.close();
  }

  /** Enqueues a rotation, at most once per ASK_AGAIN_MS per (reason, version) in this process. */
  async #ask(r: Pick<RefreshRequest, 'reason' | 'seenVersion'>): Promise<void> {
    const key = `${r.reason}.${r.seenVersion ?? ''}`;
    const now = Date.now();
    if (now - (this.#lastAsk.get(key) ?? 0) < ASK_AGAIN_MS) return;
    if (this.#lastAsk.size > 16) this.#lastAsk.clear();
    this.#lastAsk.set(key, now);
    const request: RefreshRequest = { clientKey: this.#clientKey, tenantId: this.#d.tenantId, reason: r.reason };
    if (r.seenVersion !== undefined) request.seenVersion = r.seenVersion;
    try {
      await this.#d.requestRefresh(request);
    } catch (err) {
      this.#d.logger.warn({ err, clientKey: this.#clientKey, reason: r.reason }, 'auth: could not enqueue a rotation; waiting anyway');
    }
  }
}
