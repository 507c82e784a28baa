import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { AuthSettings } from './settings.js';
import type { AcquireManyResult, AcquireResult, ClientAuthStore } from './token-store.js';
import type { AuthWakeups, WakeKind } from './wakeups.js';

/** One lease of a pool: handed out to one request at a time, and only before `until` (this process's clock). */
export interface PooledLease {
  readonly id: string;
  readonly token: string;
  readonly version: number;
  /** Hand it out no later than this (ms, local clock); 0: never again (returned to Redis when its request ends). */
  until: number;
  /** When it was last handed out (a request older than the request timeout no longer gets it renewed). */
  handedAt: number;
}

export type PoolTake = { kind: 'ok'; lease: PooledLease } | Exclude<AcquireResult, { kind: 'ok' }>;

export interface LeasePoolDeps {
  store: ClientAuthStore;
  wakeups: AuthWakeups;
  settings: AuthSettings;
  logger: Logger;
  /** Requests in flight for this client across all processes. */
  inFlightLimit: number;
  fingerprint: string;
}

interface Batch {
  /** Requests waiting for this batch's answer (each gets one lease, in order, as far as the limit allowed). */
  joined: number;
  /** The answer, and until when its leases may be handed out again (0: never, they go back after their request). */
  result: Promise<{ r: AcquireManyResult; until: number }>;
}

let batchSeq = 0;
/** An unused pool gives its idle leases back after this long (or a quarter of the hold, if shorter). */
const REST_AFTER_MS = 100;
/**
 * After a 'limited' message (a request somewhere waits under the in-flight limit) the pool passes nothing on for
 * this long: each lease that comes back goes back to Redis, so the waiter competes for it as it did without a
 * pool (the limit-wait mark lives as long).
 */
const YIELD_MS = 1_000;
const processTag = randomBytes(4).toString('hex');

/**
 * A process's lease pool for one client (issue 14): leases are taken from Redis in batches, handed out to requests
 * here, and go back to Redis in batches. In the steady state a request costs no Redis command: a lease that comes
 * back goes to the next request, and the pool renews all its leases in one script a few times per `leaseHoldMs`.
 *
 * The drain still waits for every request in flight: a pooled lease stays in the leases set while the pool holds
 * it; the pool hands leases out only while its subscription is live and it has not seen the gate close
 * ('closing'), and a lease only within `leaseHoldMs` of its taking or renewal, while the lease lives
 * `requestTimeoutMs` beyond that (the drain bound covers both). On 'closing' the idle leases go back at once, and
 * the others as their requests end. A killed process's leases expire on their own.
 */
export class LeasePool {
  readonly #d: LeasePoolDeps;
  readonly #channel: string;
  readonly #ttlMs: number;
  /** Idle leases, the most recently returned last. */
  #idle: PooledLease[] = [];
  readonly #inUse = new Set<PooledLease>();
  /** Requests in `acquire` now (a demand the next batch or renewal sizes for). */
  waiting = 0;
  /** Most leases wanted at once (in use plus waiting) since the last renewal. */
  #peak = 0;
  /** The gate closed ('closing' seen, or an acquire met it) and has not opened since. */
  #closing = false;
  #closings = 0;
  /** Until then (local ms) leases are not passed on or kept idle: someone waits under the limit. */
  #yieldUntil = 0;
  #version = 0;
  #batch: Batch | null = null;
  #toRelease: string[] = [];
  #flush: Promise<void> | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #restTimer: NodeJS.Timeout | null = null;
  #renewing = false;
  #closed = false;
  readonly #unlisten: () => void;

  constructor(deps: LeasePoolDeps) {
    this.#d = deps;
    this.#channel = deps.store.keys.channel;
    this.#ttlMs = deps.settings.requestTimeoutMs + deps.settings.leaseHoldMs;
    this.#unlisten = deps.wakeups.listen(this.#channel, (kind) => this.#onMessage(kind));
  }

  /** Leases taken or renewed now may be handed out again (subscription live, gate not closing, pool open). */
  #live(): boolean {
    return !this.#closed && !this.#closing && this.#d.wakeups.isLive(this.#channel);
  }

  /** Live, and nobody waits under the limit lately: a lease may stay in the pool. */
  #keeps(): boolean {
    return this.#live() && Date.now() >= this.#yieldUntil;
  }

  /** An idle lease still within its hold, or null. Costs no Redis command. */
  take(): PooledLease | null {
    this.#peak = Math.max(this.#peak, this.#inUse.size + this.waiting);
    if (this.#idle.length === 0 || !this.#live()) return null;
    const now = Date.now();
    for (let lease = this.#idle.pop(); lease; lease = this.#idle.pop()) {
      if (lease.version === this.#version && now < lease.until) {
        lease.handedAt = now;
        this.#inUse.add(lease);
        return lease;
      }
      void this.#queueRelease(lease.id);
    }
    return null;
  }

  /**
   * Takes a lease from Redis, joining the batch of this turn (one script for every request that asks in it, plus
   * headroom for the demand seen lately). A request the limit left out gets 'limit', as one alone would.
   */
  async fill(): Promise<PoolTake> {
    if (!this.#d.wakeups.isReady(this.#channel)) void this.#d.wakeups.ensure(this.#channel);
    let batch = this.#batch;
    if (batch === null) {
      const b: Batch = { joined: 0, result: Promise.resolve({ r: { kind: 'missing' }, until: 0 }) };
      b.result = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#send(b));
      this.#batch = batch = b;
    }
    const index = batch.joined++;
    const { r, until } = await batch.result;
    if (r.kind !== 'ok') return r;
    const id = r.leaseIds[index];
    if (id === undefined) return { kind: 'limit' };
    const lease: PooledLease = { id, token: r.token, version: r.version, until, handedAt: Date.now() };
    this.#inUse.add(lease);
    this.#scheduleRenew();
    return { kind: 'ok', lease };
  }

  async #send(batch: Batch): Promise<{ r: AcquireManyResult; until: number }> {
    if (this.#batch === batch) this.#batch = null;
    const need = batch.joined;
    const live = this.#live();
    const headroom = this.#keeps() ? Math.max(0, this.#peak - this.#inUse.size - this.#idle.length - need) : 0;
    const want = Math.max(1, Math.min(this.#d.inFlightLimit, need + headroom));
    const closings = this.#closings;
    const startedAt = Date.now();
    const { store, settings, inFlightLimit, fingerprint } = this.#d;
    const r = await store.acquireMany(`${processTag}.${++batchSeq}`, want, need, live ? this.#ttlMs : settings.requestTimeoutMs, inFlightLimit, fingerprint);
    if (r.kind === 'gate') this.#gateClosed();
    if (r.kind !== 'ok') return { r, until: 0 };
    if (closings === this.#closings) this.#closing = false; // the gate was open when the leases were taken
    if (r.version !== this.#version) {
      this.#releaseIdle();
      this.#version = r.version;
    }
    const until = live ? startedAt + Math.min(settings.leaseHoldMs, r.expiresAt - r.leaseFloorMs - r.now) : 0;
    // The requests that joined get theirs from the answer (fill); the rest is headroom, idle until asked for.
    for (const id of r.leaseIds.slice(need)) {
      if (this.#keeps() && until > Date.now()) this.#idle.push({ id, token: r.token, version: r.version, until, handedAt: 0 });
      else void this.#queueRelease(id);
    }
    this.#scheduleRenew();
    return { r, until };
  }

  /**
   * A request is done with `lease`: back to the pool while it may be handed out, else back to Redis (resolved once
   * it is there, so a request that ends while someone waits under the limit pays the round trip it did without a
   * pool, and the waiter gets its chance at the lease).
   */
  giveBack(lease: PooledLease): Promise<void> {
    if (!this.#inUse.delete(lease)) return Promise.resolve();
    if (this.#keeps() && lease.version === this.#version && Date.now() < lease.until) {
      this.#idle.push(lease);
      if (this.waiting > 0) this.#d.wakeups.poke(this.#channel, 'released');
      else if (this.#inUse.size === 0) this.#restSoon();
      this.#scheduleRenew();
      return Promise.resolve();
    }
    return this.#queueRelease(lease.id);
  }

  /** The service refused `version`: hand out none of its leases again. */
  refused(version: number): void {
    if (version !== this.#version) return;
    for (const lease of this.#inUse) lease.until = 0;
    this.#releaseIdle();
  }

  /** Stops handing out and renewing, and gives every idle lease back (the others go back as their requests end). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unlisten();
    if (this.#renewTimer) clearTimeout(this.#renewTimer);
    if (this.#restTimer) clearTimeout(this.#restTimer);
    this.#renewTimer = this.#restTimer = null;
    this.#releaseIdle();
    await this.#flush;
  }

  #onMessage(kind: WakeKind): void {
    switch (kind) {
      case 'closing':
        this.#gateClosed();
        return;
      case 'rotated':
      case 'failed':
        this.#closing = false;
        this.#releaseIdle();
        return;
      case 'opened':
        this.#closing = false;
        return;
      case 'limited':
        // A request (here or in another process) waits under the limit: the leases go back so it competes for
        // them (else a busy pool would pass its leases on among its own requests and starve the other process).
        this.#yieldUntil = Date.now() + YIELD_MS;
        this.#releaseIdle();
        return;
      case 'released':
        return;
    }
  }

  /** Nothing in use and nobody waiting: the idle leases go back after a short pause unless asked for again. */
  #restSoon(): void {
    if (this.#restTimer !== null) return;
    this.#restTimer = setTimeout(() => {
      this.#restTimer = null;
      if (this.#inUse.size === 0 && this.waiting === 0) this.#releaseIdle();
    }, Math.max(1, Math.min(REST_AFTER_MS, Math.floor(this.#d.settings.leaseHoldMs / 4))));
    this.#restTimer.unref();
  }

  #gateClosed(): void {
    this.#closing = true;
    this.#closings += 1;
    this.#releaseIdle();
  }

  #releaseIdle(): void {
    for (const lease of this.#idle) void this.#queueRelease(lease.id);
    this.#idle = [];
  }

  /** Releases go to Redis in one script per turn of the event loop; resolves once this one is there. */
  #queueRelease(id: string): Promise<void> {
    this.#toRelease.push(id);
    this.#flush ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const ids = this.#toRelease;
      this.#toRelease = [];
      this.#flush = null;
      try {
        await this.#d.store.release(...ids);
      } catch (err) {
        this.#d.logger.warn({ err, clientKey: this.#d.store.clientKey, leases: ids.length }, 'auth: could not release pooled leases; they expire on their own');
      }
    });
    return this.#flush;
  }

  /** Renews the pool's leases a third of a hold before the earliest would stop being handed out. */
  #scheduleRenew(): void {
    if (this.#renewTimer !== null || this.#renewing || this.#closed) return;
    let earliest = Infinity;
    for (const lease of this.#idle) earliest = Math.min(earliest, lease.until);
    for (const lease of this.#inUse) if (lease.until > 0) earliest = Math.min(earliest, lease.until);
    if (earliest === Infinity) return;
    const delay = Math.max(0, earliest - Date.now() - Math.floor(this.#d.settings.leaseHoldMs / 3));
    this.#renewTimer = setTimeout(() => {
      this.#renewTimer = null;
      void this.#renew();
    }, delay);
    this.#renewTimer.unref();
  }

  /**
   * One script: the leases still wanted (in use, and idle up to the demand seen since the last renewal) get a new
   * hold; idle ones beyond it go back. With no demand at all, every idle lease goes back and the pool rests.
   */
  async #renew(): Promise<void> {
    const now = Date.now();
    const current = (l: PooledLease): boolean => l.version === this.#version && l.until > now;
    if (!this.#live()) {
      this.#releaseIdle();
      return;
    }
    // A request still running past the request timeout (never given back) keeps what it has, no renewal.
    const requestTimeoutMs = this.#d.settings.requestTimeoutMs;
    const inUse = [...this.#inUse].filter((l) => current(l) && now - l.handedAt < requestTimeoutMs);
    const idle = this.#idle.filter(current);
    const stale = this.#idle.filter((l) => !current(l));
    const keep = Math.max(0, Math.min(idle.length, this.#peak - inUse.length));
    // Keep the most recently returned; the rest, and any past its hold, go back in the same script.
    const kept = idle.slice(idle.length - keep);
    const back = [...idle.slice(0, idle.length - keep), ...stale].map((l) => l.id);
    this.#idle = kept;
    this.#peak = inUse.length + this.waiting;
    const renew = [...inUse, ...kept];
    if (renew.length === 0) {
      for (const id of back) void this.#queueRelease(id);
      return;
    }
    this.#renewing = true;
    try {
      const r = await this.#d.store.renew(renew.map((l) => l.id), back, this.#ttlMs, this.#version);
      if (r.kind === 'ok') {
        const until = now + Math.min(this.#d.settings.leaseHoldMs, r.expiresAt - r.leaseFloorMs - r.now);
        const lost = new Set(r.lost);
        for (const l of renew) l.until = lost.has(l.id) ? 0 : until;
        this.#idle = this.#idle.filter((l) => !lost.has(l.id));
      } else {
        if (r.kind === 'gate') this.#gateClosed();
        for (const l of renew) l.until = 0;
        this.#releaseIdle();
      }
    } catch (err) {
      this.#d.logger.warn({ err, clientKey: this.#d.store.clientKey }, 'auth: could not renew pooled leases; taking new ones');
      for (const l of renew) l.until = 0;
      this.#releaseIdle();
    } finally {
      this.#renewing = false;
    }
    this.#scheduleRenew();
  }
}
