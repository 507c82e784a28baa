/**
 * A run's progress (its counts and phase on the run record, and the job's progress) written at most once every
 * `everyMs`, the latest state last (decision 0274). Each page of each entity wrote both: three writes and two scripts
 * a page, most of a small tenant's run's progress cost, read by nobody before the run ends. A run shorter than
 * `everyMs` writes none (its finish writes the counts); a longer one's record lags its work by at most `everyMs`.
 */
export class ProgressWrites<P> {
  #last: number;
  #pending: P | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    private readonly write: (p: P) => Promise<void>,
    private readonly everyMs: number,
    startedAt = Date.now(),
  ) {
    this.#last = startedAt;
  }

  /** The run's latest progress: written now if `everyMs` has passed since the last write, else when it has. */
  push(p: P): void {
    if (this.#stopped) return;
    this.#pending = p;
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#last + this.everyMs - Date.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
  }

  #flush(): void {
    this.#timer = undefined;
    const p = this.#pending;
    this.#pending = undefined;
    if (p === undefined || this.#stopped) return;
    this.#last = Date.now();
    // Writes go one after another, the latest last; a failed write is left for the next (progress is advisory).
    this.#writing = this.#writing.then(() => this.write(p)).catch(() => undefined);
  }

  /** No more writes; resolves once a write under way has ended (the run's finish is written after it, never before). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending = undefined;
    await this.#writing;
  }
}
