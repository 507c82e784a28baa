/**
 * What a run is doing, for the operator and the stall watchdog (issue 35, decision 156): its phase, a count of
 * steps (a record decided, a request answered, a page read) that the watchdog turns into "last progress at", and the
 * waits under way by kind, so a run that stops moving can say where it waits. Cheap on the hot path: a step is an
 * increment, a wait two map updates; the watchdog reads them a few times a minute.
 */
import type { PoolSnapshot } from './pool.js';

/**
 * Where a run's code may wait (besides the request pool, which reports its own slots, takes and pause):
 * `adoption` the first sync's listing of the service's contacts; `platform` a page read from the platform;
 * `platform-limit` a platform's short rate limit waited out; `window` the run's window of records under way;
 * `page` a page of an earlier entity a record needs (an invoice's contact); `record` an earlier push of the same
 * record; `redis` record state written; `checkpoint` a checkpoint or progress written; `recheck` the pause before
 * looking up a contact whose create is unsettled.
 */
export type WaitKind = 'adoption' | 'platform' | 'platform-limit' | 'window' | 'page' | 'record' | 'redis' | 'checkpoint' | 'recheck';

export interface Wait {
  kind: WaitKind;
  count: number;
  /** How long waits of this kind have been under way without a break (ms). */
  forMs: number;
}

export interface ProgressReport {
  phase: string;
  /** When the run last made progress (ms), as the watchdog last saw it. */
  lastProgressAt: number;
  waits: Wait[];
  pool: PoolSnapshot | undefined;
  window: { records: number; pages: number; waiting: number } | undefined;
}

export class RunProgress {
  /** The run's phase: `starting`, `adopting`, an entity's name, `pending invoices`, `set-aside records`. */
  phase = 'starting';
  /** Steps taken (records decided, requests answered, pages read). */
  steps = 0;
  private readonly waits = new Map<WaitKind, { n: number; since: number }>();
  /** Filled in by the pipeline once the run's window exists. */
  window: (() => { records: number; pages: number; waiting: number }) | undefined;

  step(): void {
    this.steps += 1;
  }

  enter(kind: WaitKind): void {
    const w = this.waits.get(kind);
    if (w) w.n += 1;
    else this.waits.set(kind, { n: 1, since: Date.now() });
  }

  leave(kind: WaitKind): void {
    const w = this.waits.get(kind);
    if (!w) return;
    w.n -= 1;
    if (w.n <= 0) this.waits.delete(kind);
  }

  /** `p`, counted as a wait of `kind` until it settles. */
  async during<T>(kind: WaitKind, p: Promise<T>): Promise<T> {
    this.enter(kind);
    try {
      return await p;
    } finally {
      this.leave(kind);
    }
  }

  /** The waits under way, the longest first. */
  waiting(now = Date.now()): Wait[] {
    return [...this.waits].map(([kind, w]) => ({ kind, count: w.n, forMs: now - w.since })).sort((a, b) => b.forMs - a.forMs);
  }
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;

/** One line of where a run waits: `window 1 (290 s), redis 6 (290 s); requests: 6 of 6 allowed held (6 waiting for a token lease, oldest 290 s), 41 takes waiting (290 s)`. */
export function describeWaits(r: Pick<ProgressReport, 'waits' | 'pool' | 'window'>): string {
  const parts: string[] = [];
  if (r.waits.length > 0) parts.push(r.waits.map((w) => `${w.kind} ${w.count} (${seconds(w.forMs)})`).join(', '));
  const p = r.pool;
  if (p) {
    const held = p.held.token + p.held.sent;
    let pool = `requests: ${held} of ${p.allowed} allowed (limit ${p.limit}) held`;
    if (held > 0) pool += ` (${p.held.token} waiting for a token lease, ${p.held.sent} sent; oldest ${seconds(p.held.oldestMs)})`;
    if (p.waiting.count > 0) pool += `, ${p.waiting.count} waiting for a slot (oldest ${seconds(p.waiting.oldestMs)})`;
    if (p.pausedForMs > 0) pool += `, paused for ${seconds(p.pausedForMs)} more`;
    parts.push(pool);
  }
  const w = r.window;
  if (w && (w.records > 0 || w.waiting > 0)) parts.push(`window: ${w.records} records on ${w.pages} pages under way, ${w.waiting} pages waiting`);
  return parts.join('; ') || 'nothing under way';
}
