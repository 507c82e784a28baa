/**
 * Log lines of refused webhook requests, at info and rate-limited (decision 0117): anyone can send a refused
 * request, so a flood of them must not become a flood of lines. Up to `perMinute` lines a minute; past that, one
 * line when the next one is written says how many were left out, by reason.
 */
import type { Logger } from '../logger.js';

export class RefusalLog {
  #windowStart = 0;
  #written = 0;
  #skipped = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    private readonly perMinute = 20,
  ) {}

  refused(fields: { tenant: string; reason: string; status: number }, now = Date.now()): void {
    if (now - this.#windowStart >= 60_000) {
      if (this.#skipped.size > 0) {
        const byReason = Object.fromEntries(this.#skipped);
        const total = [...this.#skipped.values()].reduce((a, b) => a + b, 0);
        this.logger.info({ skipped: total, byReason }, 'webhook refusals not logged in the last minute (over the log rate)');
      }
      this.#windowStart = now;
      this.#written = 0;
      this.#skipped = new Map();
    }
    if (this.#written < this.perMinute) {
      this.#written += 1;
      this.logger.info(fields, 'webhook refused');
      return;
    }
    this.#skipped.set(fields.reason, (this.#skipped.get(fields.reason) ?? 0) + 1);
  }
}
