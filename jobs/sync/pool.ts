/**
 * A run's request pool: the request slots (src/collections/slots.ts) of one tenant's run, at most `limit` requests
 * in flight at the service. A slot is held for one attempt's send: a request waiting out its back-off after a
 * transient fault holds none, so a flaky service does not drain the pool (issue 28, decision 126). How many the
 * pool lets out at once adapts to the service's answers (AIMD, decisions 127 and 155):
 * - a 429 or a 503 is first its own request's: the client sends that request again after its Retry-After (or its
 *   back-off), while the pool goes on. Only a burst, overloaded answers (429s and 503s) at least a quarter of the
 *   last 32, halves the number allowed (down to 1), at most once per round of requests: answers to requests sent
 *   before the last cut do not cut again (a burst is one signal, as in TCP). A service shedding a few percent of its
 *   load with 429s costs each refused request its Retry-After, not the run its pool;
 * - a Retry-After pauses the whole pool (no request of the run starts before it; capped at 30 s) only when most of
 *   the last 32 answers were refused: the service is refusing the tenant, not a request;
 * - every `allowed` answers that were not overloaded add 1, back up to `limit` (one per round of requests).
 * Other failures (500, 502, 504, resets, timeouts) say nothing of load and change nothing. A request coming back from
 * its back-off goes before requests not yet started, so a record that failed once is not also sent to the back of
 * the queue.
 *
 * The pool also keeps what a stalled run's report needs (`snapshot`): the slots held and since when, at which stage
 * (waiting for a token lease, or sent and waiting for the answer), the takes waiting and the pause.
 *
 * One reading of the clock decides both whether a take may start and whether a pause still holds (issue 35): a pause's
 * timer may fire a millisecond before the pause's end by `Date.now()`; reading the clock twice (paused: no start;
 * then, a tick later, not paused: no timer) left every waiter stranded once no request was in flight to wake them.
 */
import type { RequestSlots, SlotOutcome } from '../../src/collections/slots.js';

/** Answers remembered to tell a burst from a flaky or shedding service's scattered refusals. */
const RECENT = 32;
/** A quarter of the recent answers overloaded is a burst: the pool halves. */
const BURST = RECENT / 4;
/** More than half of the recent answers refused: the service refuses the tenant, and a Retry-After pauses the run. */
const MOST = RECENT / 2 + 1;
/** The longest pause for one Retry-After (a longer one is the request's own: it fails and its record is set aside). */
export const MAX_PAUSE_MS = 30_000;

interface Waiter {
  resolve: (ticket: number) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  since: number;
}

/** Where a slot's request is: waiting for a token lease (taken, not sent yet), or sent. */
type Stage = 'token' | 'sent';

export interface PoolEvents {
  /** The number allowed at once was cut (`from` -> `to`), or a pause began (`pauseMs`; 0: none began). */
  onSlowDown?: (e: { from: number; to: number; status: number; pauseMs: number; refused: number }) => void;
}

/** The pool as a stalled run's report shows it. */
export interface PoolSnapshot {
  limit: number;
  allowed: number;
  /** Slots held, by stage, and the oldest held (ms). */
  held: { token: number; sent: number; oldestMs: number };
  /** Takes waiting for a slot, and the oldest waiting (ms). */
  waiting: { count: number; oldestMs: number };
  /** A pause under way: ms left. */
  pausedForMs: number;
  /** Overloaded answers (429, 503) among the last 32. */
  recentOverloaded: number;
}

export class Pool implements RequestSlots {
  private allowedNow: number;
  private readonly waiters: Waiter[] = [];
  /** Slots held: ticket -> when taken and the stage of its request. */
  private readonly held = new Map<number, { at: number; stage: Stage }>();
  /** Tickets handed out; a ticket is the number of the take. */
  private taken = 0;
  /** Tickets up to this one were taken before the last cut: their overloaded answers do not cut again. */
  private cutAt = 0;
  /** Answers not overloaded since the last change of `allowedNow`. */
  private fine = 0;
  private readonly recent = new Uint8Array(RECENT);
  private recentAt = 0;
  private recentOverloaded = 0;
  private pausedUntil = 0;
  private pauseTimer: NodeJS.Timeout | undefined;
  private readonly followed = new WeakSet<AbortSignal>();

  constructor(
    /** The most requests in flight at once (the tenant's in-flight limit or SYNC_CONCURRENCY). */
    readonly limit: number,
    private readonly events: PoolEvents = {},
    /** The clock (ms); tests pass one they move by hand. */
    private readonly clock: () => number = Date.now,
  ) {
    this.allowedNow = limit;
  }

  /** Requests in flight now (slots taken). */
  get running(): number {
    return this.held.size;
  }

  /** How many requests the pool lets out at once now (`limit` until the service says it is overloaded). */
  get allowed(): number {
    return this.allowedNow;
  }

  take(signal: AbortSignal | undefined, again: boolean): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const now = this.clock();
    if (this.waiters.length === 0 && this.canStart(now)) return Promise.resolve(this.hand(now));
    return new Promise<number>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal, since: now };
      if (again) this.waiters.unshift(w);
      else this.waiters.push(w);
      if (signal) this.follow(signal);
      this.schedule(now);
    });
  }

  sending(ticket: number): void {
    const h = this.held.get(ticket);
    if (h) h.stage = 'sent';
  }

  give(ticket: number, outcome: SlotOutcome): void {
    if (!this.held.delete(ticket)) return;
    if (outcome.kind === 'answered') {
      this.remember(false);
      this.fine += 1;
      if (this.fine >= this.allowedNow && this.allowedNow < this.limit) {
        this.allowedNow += 1;
        this.fine = 0;
      }
    } else if (outcome.kind === 'overloaded') {
      this.remember(true);
      const from = this.allowedNow;
      if (this.recentOverloaded >= BURST && ticket > this.cutAt) {
        this.allowedNow = Math.max(1, Math.floor(from / 2));
        this.cutAt = this.taken;
        this.fine = 0;
      }
      const pauseMs = this.recentOverloaded >= MOST ? Math.min(MAX_PAUSE_MS, outcome.retryAfterMs ?? 0) : 0;
      const now = this.clock();
      // A pause begins (none held), or one under way is drawn out by a later Retry-After.
      const began = pauseMs > 0 && this.pausedUntil <= now;
      if (pauseMs > 0) this.pausedUntil = Math.max(this.pausedUntil, now + pauseMs);
      if (began || this.allowedNow !== from) {
        this.events.onSlowDown?.({ from, to: this.allowedNow, status: outcome.status, pauseMs: began ? pauseMs : 0, refused: this.recentOverloaded });
      }
    }
    this.pump();
  }

  snapshot(now = this.clock()): PoolSnapshot {
    let token = 0;
    let oldestHeld = now;
    for (const h of this.held.values()) {
      if (h.stage === 'token') token += 1;
      oldestHeld = Math.min(oldestHeld, h.at);
    }
    const oldestWaiting = this.waiters.reduce((m, w) => Math.min(m, w.since), now);
    return {
      limit: this.limit,
      allowed: this.allowedNow,
      held: { token, sent: this.held.size - token, oldestMs: now - oldestHeld },
      waiting: { count: this.waiters.length, oldestMs: now - oldestWaiting },
      pausedForMs: Math.max(0, this.pausedUntil - now),
      recentOverloaded: this.recentOverloaded,
    };
  }

  private hand(now: number): number {
    this.taken += 1;
    this.held.set(this.taken, { at: now, stage: 'token' });
    return this.taken;
  }

  private canStart(now: number): boolean {
    return this.held.size < this.allowedNow && now >= this.pausedUntil;
  }

  /** Lets waiters go while slots are free and no pause holds; a pause wakes them at its end. One clock reading. */
  private pump(now = this.clock()): void {
    while (this.waiters.length > 0 && this.canStart(now)) this.waiters.shift()!.resolve(this.hand(now));
    this.schedule(now);
  }

  /**
   * Waiters held by a pause get a timer for its end (by the same reading of the clock that found them held); waiters
   * held by busy slots need none (a slot given back pumps).
   */
  private schedule(now: number): void {
    if (this.waiters.length === 0 || this.pauseTimer !== undefined || now >= this.pausedUntil) return;
    this.pauseTimer = setTimeout(() => {
      this.pauseTimer = undefined;
      this.pump();
    }, this.pausedUntil - now);
  }

  private remember(overloaded: boolean): void {
    const v = overloaded ? 1 : 0;
    this.recentOverloaded += v - this.recent[this.recentAt]!;
    this.recent[this.recentAt] = v;
    this.recentAt = (this.recentAt + 1) % RECENT;
  }

  /** One listener per signal (a run's requests share one): its abort rejects every waiter that passed it. */
  private follow(signal: AbortSignal): void {
    if (this.followed.has(signal)) return;
    this.followed.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (let i = this.waiters.length - 1; i >= 0; i -= 1) {
          const w = this.waiters[i]!;
          if (w.signal !== signal) continue;
          this.waiters.splice(i, 1);
          w.reject(signal.reason);
        }
        if (this.waiters.length === 0 && this.pauseTimer !== undefined) {
          clearTimeout(this.pauseTimer);
          this.pauseTimer = undefined;
        }
      },
      { once: true },
    );
  }
}
