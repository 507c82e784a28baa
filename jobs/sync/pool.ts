/**
 * A bounded pool: at most `limit` tasks run at once; `run` resolves when the task has started and
 * ended (its result), and waits for a free slot first. Used to keep a fixed number of requests in flight
 * across page boundaries.
 */
export class Pool {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(readonly limit: number) {}

  private async slot(): Promise<void> {
    if (this.active < this.limit) {
      this.active += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private free(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active -= 1;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.slot();
    try {
      return await task();
    } finally {
      this.free();
    }
  }

  get running(): number {
    return this.active;
  }
}
