import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

/**
 * The messages of a client's channel. 'closing': a rotation closed the gate and drains; 'limited': a request found
 * the in-flight limit reached (lease pools hand back their idle leases on either).
 */
export type WakeKind = 'rotated' | 'opened' | 'released' | 'failed' | 'closing' | 'limited';
const KINDS: ReadonlySet<string> = new Set<WakeKind>(['rotated', 'opened', 'released', 'failed', 'closing', 'limited']);

interface Waiter {
  kinds: readonly WakeKind[];
  wake: (kind: WakeKind | 'timeout' | 'aborted') => void;
}

interface ChannelState {
  subscribed: Promise<void> | null;
  ready: boolean;
  /** Messages seen per kind: a waiter that read the state at generation g and finds g moved retries at once. */
  seen: Record<WakeKind, number>;
  waiters: Set<Waiter>;
  listeners: Set<(kind: WakeKind) => void>;
}

/**
 * The one pub/sub subscriber of a process, shared by every provider and the refresher (ioredis needs a
 * dedicated connection in subscriber mode). A wait ends on a matching message, or after `timeoutMs`
 * (the polling fallback: a missed message costs at most one poll period).
 */
export class AuthWakeups {
  readonly #sub: Redis;
  readonly #owned: boolean;
  readonly #logger: Logger;
  readonly #channels = new Map<string, ChannelState>();
  readonly #onMessage = (channel: string, message: string): void => this.#dispatch(channel, message);
  #closed = false;
  #connecting: Promise<void> | null = null;

  constructor(subscriber: Redis, logger: Logger, owned: boolean) {
    this.#sub = subscriber;
    this.#owned = owned;
    this.#logger = logger;
    subscriber.on('message', this.#onMessage);
  }

  #state(channel: string): ChannelState {
    let s = this.#channels.get(channel);
    if (!s) {
      s = { subscribed: null, ready: false, seen: { rotated: 0, opened: 0, released: 0, failed: 0, closing: 0, limited: 0 }, waiters: new Set(), listeners: new Set() };
      this.#channels.set(channel, s);
    }
    return s;
  }

  /** Subscribes once per channel (later calls share the first). A failure is logged and retried next time. */
  ensure(channel: string): Promise<void> {
    const s = this.#state(channel);
    if (s.subscribed === null && !this.#closed) {
      // A lazy connection (lazyConnect) is opened first: a producer-role client refuses commands while offline.
      if (this.#connecting === null && this.#sub.status === 'wait') this.#connecting = this.#sub.connect();
      const connected = this.#connecting ?? Promise.resolve();
      s.subscribed = connected.then(() => this.#sub.subscribe(channel)).then(
        () => {
          s.ready = true;
        },
        (err: unknown) => {
          s.subscribed = null;
          this.#connecting = null;
          this.#logger.warn({ err, channel }, 'auth: subscribe failed; waits fall back to polling');
        },
      );
    }
    return s.subscribed ?? Promise.resolve();
  }

  isReady(channel: string): boolean {
    return this.#channels.get(channel)?.ready ?? false;
  }

  /**
   * Subscribed to `channel` and connected now: its messages arrive (a lease pool hands out leases only then; a
   * message missed while disconnected is covered by the leases' bounded life).
   */
  isLive(channel: string): boolean {
    return !this.#closed && this.#sub.status === 'ready' && this.isReady(channel);
  }

  /** Calls `fn` on every message of `channel` (and every poke); returns the unsubscribe function. */
  listen(channel: string, fn: (kind: WakeKind) => void): () => void {
    const listeners = this.#state(channel).listeners;
    listeners.add(fn);
    return () => listeners.delete(fn);
  }

  /**
   * Leaves `channel` when nothing of this process listens to or waits on it (an idle tenant's provider closed): the
   * subscription and its state go; a later `ensure` or `listen` subscribes again.
   */
  release(channel: string): void {
    const s = this.#channels.get(channel);
    if (!s || s.waiters.size > 0 || s.listeners.size > 0) return;
    this.#channels.delete(channel);
    const subscribed = s.subscribed;
    if (subscribed === null || this.#closed) return;
    void subscribed.then(async () => {
      // Asked for again meanwhile: that state subscribed (or will): keep the subscription.
      if (!this.#channels.has(channel) && !this.#closed) await this.#sub.unsubscribe(channel);
    }).catch(() => undefined);
  }

  /** Delivers `kind` to this process's waiters of `channel` as if it came from Redis (a lease back in a pool). */
  poke(channel: string, kind: WakeKind): void {
    this.#dispatch(channel, kind);
  }

  /** How many messages of `kinds` the channel has had so far (see `wait`'s `sinceGeneration`). */
  generation(channel: string, kinds: readonly WakeKind[]): number {
    const seen = this.#state(channel).seen;
    return kinds.reduce((n, k) => n + seen[k], 0);
  }

  /**
   * Waits for one of `kinds` on `channel`, at most `timeoutMs`. With `sinceGeneration` (from `generation(channel,
   * kinds)`), returns at once when such a message arrived since then (closing the race between a check and the wait).
   */
  wait(
    channel: string,
    kinds: readonly WakeKind[],
    timeoutMs: number,
    signal?: AbortSignal,
    sinceGeneration?: number,
  ): Promise<WakeKind | 'timeout' | 'aborted' | 'missed'> {
    const s = this.#state(channel);
    if (sinceGeneration !== undefined && this.generation(channel, kinds) !== sinceGeneration) return Promise.resolve('missed');
    if (signal?.aborted) return Promise.resolve('aborted');
    if (this.#closed) return Promise.resolve('timeout');
    return new Promise((resolve) => {
      const waiter: Waiter = {
        kinds,
        wake: (kind) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          s.waiters.delete(waiter);
          resolve(kind);
        },
      };
      const onAbort = (): void => waiter.wake('aborted');
      const timer = setTimeout(() => waiter.wake('timeout'), Math.max(1, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      s.waiters.add(waiter);
    });
  }

  #dispatch(channel: string, message: string): void {
    const s = this.#channels.get(channel);
    if (!s || !KINDS.has(message)) return;
    const kind = message as WakeKind;
    s.seen[kind] += 1;
    for (const w of [...s.waiters]) if (w.kinds.includes(kind)) w.wake(kind);
    for (const fn of s.listeners) fn(kind);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#channels.values()) for (const w of [...s.waiters]) w.wake('timeout');
    this.#sub.off('message', this.#onMessage);
    const channels = [...this.#channels.keys()];
    this.#channels.clear();
    if (this.#owned) {
      this.#sub.disconnect();
    } else if (channels.length > 0) {
      await this.#sub.unsubscribe(...channels).catch(() => undefined);
    }
  }
}
