/**
 * The run's window of records under way: pages are read ahead and pushed while the records they hold fit in
 * the window, so the request pool stays full across page and entity boundaries (a page's slow records never
 * hold up the next page). A page larger than the window still goes when nothing else is under way.
 */
export class RecordWindow {
  private used = 0;
  private readonly waiters: { n: number; resolve: () => void }[] = [];
  constructor(readonly limit: number) {}

  /** Waits until `n` records fit (or nothing is under way), then takes them. */
  async acquire(n: number): Promise<void> {
    if (this.waiters.length === 0 && this.fits(n)) {
      this.used += n;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push({ n, resolve }));
  }

  release(n: number): void {
    this.used -= n;
    // In order: a large page waiting first is not starved by smaller ones behind it.
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.n)) {
      const w = this.waiters.shift()!;
      this.used += w.n;
      w.resolve();
    }
  }

  get underWay(): number {
    return this.used;
  }

  private fits(n: number): boolean {
    return this.used === 0 || this.used + n <= this.limit;
  }
}

/**
 * Records under way per request slot of the pool (records decided without a request, Redis round trips). 32, not
 * 16: the payment pages (no request in a first sync, several Redis round trips each) ran two at a time behind the
 * last invoice pages and left the pool empty for the run's last ~5% (issue 14).
 */
const WINDOW_PER_SLOT = 32;

/** How many records a run keeps under way: at least two pages, and enough to keep every request slot busy. */
export function windowSize(pageSize: number, poolLimit: number): number {
  return Math.max(2 * pageSize, WINDOW_PER_SLOT * poolLimit);
}
