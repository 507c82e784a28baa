/**
 * The stall watchdog of one sync run (issue 35, decision 156). A run that makes no progress (no record decided, no
 * request answered, no page read) for `stallMs` is stalled, whatever the cause: the watchdog resolves `stalled` with
 * a RunStalledError that says where the run waits (its waits by kind, its request pool, its window), and the
 * processor ends the attempt so the job is retried and resumed from its checkpoint. It ticks a few times per bound:
 * each tick notes the time of the last progress it saw and hands a report to `onTick` (the run record, a gauge), so
 * an operator sees "running, last progress 12 min ago" long before the watchdog acts.
 *
 * While Redis is down (`paused`), the quiet clock stops: the run cannot move, and the outage has its own report.
 */
import { describeWaits, type ProgressReport, type RunProgress } from './progress.js';
import type { Pool } from './pool.js';

export class RunStalledError extends Error {
  readonly code = 'RUN_STALLED';
  constructor(
    readonly quietMs: number,
    readonly report: ProgressReport,
  ) {
    super(`stalled: no progress for ${Math.round(quietMs / 1000)} s in ${report.phase}; waiting on ${describeWaits(report)}`);
    this.name = 'RunStalledError';
  }
}

export interface WatchOptions {
  /** No progress for this long is a stall. */
  stallMs: number;
  /** Redis is down: the quiet clock stops. */
  paused?: () => boolean;
  /** Every tick, with the report and how long the run has been quiet (not called again before it settles). */
  onTick?: (report: ProgressReport, quietMs: number) => Promise<void> | void;
}

export interface RunWatch {
  /** Resolves once the run is stalled (never, if it is not). */
  readonly stalled: Promise<RunStalledError>;
  /** The report now. */
  report(): ProgressReport;
  stop(): void;
}

/** How often the watchdog looks: a tenth of the bound, between 250 ms and 15 s. */
export function tickOf(stallMs: number): number {
  return Math.max(250, Math.min(15_000, Math.floor(stallMs / 10)));
}

export function watchRun(progress: RunProgress, pool: Pool, o: WatchOptions): RunWatch {
  let lastProgressAt = Date.now();
  let steps = progress.steps;
  let ticking = false;
  let stop = (): void => undefined;
  const report = (now = Date.now()): ProgressReport => ({
    phase: progress.phase,
    lastProgressAt,
    waits: progress.waiting(now),
    pool: pool.snapshot(now),
    window: progress.window?.(),
  });
  const stalled = new Promise<RunStalledError>((resolve) => {
    const timer = setInterval(() => {
      const now = Date.now();
      if (progress.steps !== steps || o.paused?.() === true) {
        steps = progress.steps;
        lastProgressAt = now;
      }
      const quietMs = now - lastProgressAt;
      const r = report(now);
      if (quietMs >= o.stallMs) {
        clearInterval(timer);
        resolve(new RunStalledError(quietMs, r));
        return;
      }
      if (ticking || o.onTick === undefined) return;
      ticking = true;
      void Promise.resolve()
        .then(() => o.onTick?.(r, quietMs))
        .catch(() => undefined)
        .finally(() => (ticking = false));
    }, tickOf(o.stallMs));
    timer.unref();
    stop = () => clearInterval(timer);
  });
  return { stalled, report: () => report(), stop: () => stop() };
}
