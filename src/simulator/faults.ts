/**
 * Fault injection and load knobs: latency with jitter, a deterministic script, random 5xx / 429 / reset /
 * drop-after-commit rates, and a per-client token-bucket rate limit.
 */
import { z } from 'zod';
import type { FaultSettings, ScriptEntry, ScriptFault } from './types.js';

/** No faults, no latency, no rate limit (frozen; `setFaults(DEFAULT_FAULTS)` restores a clean service). */
export const DEFAULT_FAULTS: Readonly<FaultSettings> = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  error5xxRate: 0,
  rate429: 0,
  retryAfterS: 1,
  resetRate: 0,
  dropAfterCommitRate: 0,
  rateLimitPerSecond: null,
  script: Object.freeze([]) as unknown as ScriptEntry[],
});

const fraction = z.number().min(0).max(1);
/** Partial<FaultSettings> as accepted by `POST /__sim/faults`. */
export const faultSettingsSchema = z.strictObject({
  latencyMs: z.number().min(0).optional(),
  jitterMs: z.number().min(0).optional(),
  error5xxRate: fraction.optional(),
  rate429: fraction.optional(),
  retryAfterS: z.number().int().min(0).optional(),
  resetRate: fraction.optional(),
  dropAfterCommitRate: fraction.optional(),
  rateLimitPerSecond: z.number().positive().nullable().optional(),
  script: z
    .array(
      z.strictObject({
        route: z.string().min(1).optional(),
        fault: z.enum(['500', '503', '422', '429', 'reset', 'drop']),
        count: z.number().int().min(0),
        retryAfterS: z.number().int().min(0).optional(),
        matching: z.string().min(1).optional(),
      }),
    )
    .optional(),
});

/** What to do with one request, decided before processing it. */
export type FaultDecision =
  | { kind: 'none' }
  | { kind: 'status'; status: 500 | 503 | 422 }
  | { kind: '429'; retryAfterS: number; source: '429' | 'rate-limit' }
  | { kind: 'reset' }
  | { kind: 'drop' };

export class FaultPlan {
  #s: FaultSettings = { ...DEFAULT_FAULTS, script: [] };
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(initial: Partial<FaultSettings> = {}, random: () => number = Math.random, now: () => number = Date.now) {
    this.#random = random;
    this.#now = now;
    this.set(initial);
  }

  /** Merges the given settings; `script` replaces the script (entries are copied). */
  set(f: Partial<FaultSettings>): void {
    const { script, ...rest } = f;
    const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<FaultSettings>;
    this.#s = { ...this.#s, ...defined, script: script ? script.map((e) => ({ ...e })) : this.#s.script };
    if (f.rateLimitPerSecond !== undefined) this.#buckets.clear();
  }

  settings(): FaultSettings {
    return { ...this.#s, script: this.#s.script.map((e) => ({ ...e })) };
  }

  /** The delay before processing: latency +- uniform jitter, never negative. */
  delayMs(): number {
    const { latencyMs, jitterMs } = this.#s;
    if (latencyMs <= 0 && jitterMs <= 0) return 0;
    return Math.max(0, latencyMs + (jitterMs > 0 ? (this.#random() * 2 - 1) * jitterMs : 0));
  }

  /** Token bucket per client id: null when admitted, else the Retry-After in seconds. */
  rateLimit(clientId: string): number | null {
    const rate = this.#s.rateLimitPerSecond;
    if (rate === null) return null;
    const now = this.#now();
    const b = this.#buckets.get(clientId) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    this.#buckets.set(clientId, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / rate));
  }

  /**
   * The script first (first matching entry with count > 0), then the random rates. `request` (path and query,
   * body) is what an entry's `matching` looks in.
   */
  decide(route: string, request: { url?: string | undefined; body?: string | undefined } = {}): FaultDecision {
    const matches = (text: string | undefined): boolean => text === undefined || (request.url ?? '').includes(text) || (request.body ?? '').includes(text);
    const entry = this.#s.script.find((e) => e.count > 0 && (e.route === undefined || e.route === route) && matches(e.matching));
    if (entry) {
      entry.count -= 1;
      return this.#fromScript(entry.fault, entry);
    }
    const s = this.#s;
    if (s.error5xxRate > 0 && this.#random() < s.error5xxRate) return { kind: 'status', status: this.#random() < 0.5 ? 500 : 503 };
    if (s.rate429 > 0 && this.#random() < s.rate429) return { kind: '429', retryAfterS: s.retryAfterS, source: '429' };
    if (s.resetRate > 0 && this.#random() < s.resetRate) return { kind: 'reset' };
    if (s.dropAfterCommitRate > 0 && this.#random() < s.dropAfterCommitRate) return { kind: 'drop' };
    return { kind: 'none' };
  }

  #fromScript(fault: ScriptFault, entry: ScriptEntry): FaultDecision {
    switch (fault) {
      case '500':
        return { kind: 'status', status: 500 };
      case '503':
        return { kind: 'status', status: 503 };
      case '422':
        return { kind: 'status', status: 422 };
      case '429':
        return { kind: '429', retryAfterS: entry.retryAfterS ?? this.#s.retryAfterS, source: '429' };
      case 'reset':
        return { kind: 'reset' };
      case 'drop':
        return { kind: 'drop' };
    }
  }
}
