/**
 * The run's window of records under way: pages are read ahead and pushed while the records they hold fit in
 * the window, so the request pool stays full across page and entity boundaries (a page's slow records never
 * hold up the next page). A page larger than the window still goes when nothing else is under way. A record
 * leaves the window when its own push ends (`release(1)`), not when its page does: a page waiting for a few records
 * in a back-off or an ambiguous create's recheck holds only those (decision 129). Pages under way are bounded too
 * (`maxPages`), so pages kept for their last records cannot pile up in memory.
 */
export class RecordWindow {
  private used = 0;
  private pages = 0;
  private readonly waiters: { n: number; resolve: () => void }[] = [];
  constructor(
    readonly limit: number,
    readonly maxPages = Number.POSITIVE_INFINITY,
  ) {}

  /** Waits until a page of `n` records fits (or nothing is under way), then takes them. */
  async acquire(n: number): Promise<void> {
    if (this.waiters.length === 0 && this.fits(n)) {
      this.used += n;
      this.pages += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push({ n, resolve }));
  }

  /** `n` records of a page under way are done. */
  release(n: number): void {
    this.used -= n;
    this.wake();
  }

  /** A page is done (its records released before or with this). */
  endPage(): void {
    this.pages -= 1;
    this.wake();
  }

  get underWay(): number {
    return this.used;
  }

  /** Pages under way, and pages waiting for room (what a stalled run's report shows). */
  get pagesUnderWay(): number {
    return this.pages;
  }

  get pagesWaiting(): number {
    return this.waiters.length;
  }

  private wake(): void {
    // In order: a large page waiting first is not starved by smaller ones behind it.
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.n)) {
      const w = this.waiters.shift()!;
      this.used += w.n;
      this.pages += 1;
      w.resolve();
    }
  }

  private fits(n: number): boolean {
    return this.pages === 0 || (this.pages < this.maxPages && this.used + n <= this.limit);
  }
}

/** Pages under way at most, as many times as the window holds full pages (pages kept for their slowest records). */
const PAGES_PER_WINDOW = 4;

/** The most pages a run keeps under way: four windows' worth of full pages, and never fewer than 4. */
export function maxPagesOf(window: number, pageSize: number): number {
  return Math.max(4, PAGES_PER_WINDOW * Math.ceil(window / Math.max(1, pageSize)));
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
