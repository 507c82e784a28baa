import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

/** Error codes of a connection that failed or dropped (not of a command that Redis refused). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED']);
const CONNECTION_MESSAGE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|Connection is closed|Stream isn't writeable|max retries per request/i;

/** Whether an error says a Redis connection is down (as opposed to a command or script that failed). */
export function isConnectionError(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return (code !== undefined && CONNECTION_CODES.has(code)) || CONNECTION_MESSAGE.test(err.message);
}

/**
 * One voice for Redis outages in a process (issue 12). Every connection (the shared one, BullMQ's queues and
 * workers, the auth subscriber) reports its errors here instead of logging each one: an outage is logged when it
 * starts, every `repeatMs` while it lasts, and when the shared connection is ready again; the errors in between
 * are only counted. Readiness (/readyz) stays the signal to alert on. Errors that are not about the connection
 * are the caller's to log.
 */
export class RedisOutageLog {
  readonly #redis: Redis;
  readonly #logger: Logger;
  readonly #repeatMs: number;
  #down: { since: number; errors: number; timer: NodeJS.Timeout } | undefined;
  /** Last time a lone connection's error was logged while the shared connection was fine, per source. */
  readonly #lone = new Map<string, number>();
  readonly #onError = (err: Error): void => void this.report('redis', err);
  readonly #onReady = (): void => this.#up();

  constructor(redis: Redis, logger: Logger, options: { repeatMs: number }) {
    this.#redis = redis;
    this.#logger = logger;
    this.#repeatMs = options.repeatMs;
    redis.on('error', this.#onError);
    redis.on('ready', this.#onReady);
  }

  /** Whether an outage is going on (as far as the connections have told). */
  get down(): boolean {
    return this.#down !== undefined;
  }

  /**
   * An error of connection `source` (a queue name, `redis`, `auth`). Returns false when it is not a connection
   * error (the caller logs it as before); connection errors are handled here.
   */
  report(source: string, err: Error): boolean {
    if (!isConnectionError(err)) return false;
    if (this.#down) {
      this.#down.errors += 1;
      return true;
    }
    if (source !== 'redis' && this.#redis.status === 'ready') {
      // The shared connection is fine: one connection dropped (a client kill, a network blip). Said at most once
      // per source and period.
      const last = this.#lone.get(source) ?? 0;
      if (Date.now() - last >= this.#repeatMs) {
        this.#lone.set(source, Date.now());
        this.#logger.warn({ connection: source, err: err.message }, 'a Redis connection dropped; it reconnects by itself');
      }
      return true;
    }
    const since = Date.now();
    const timer = setInterval(() => {
      if (!this.#down) return;
      this.#logger.warn({ downForS: Math.round((Date.now() - this.#down.since) / 1000), errors: this.#down.errors }, 'Redis still unreachable');
    }, this.#repeatMs);
    timer.unref();
    this.#down = { since, errors: 1, timer };
    this.#logger.error({ connection: source, err: err.message }, 'Redis unreachable: jobs wait until it is back (/readyz answers 503 meanwhile); further connection errors are counted, not logged');
    return true;
  }

  #up(): void {
    const down = this.#down;
    if (!down) return;
    clearInterval(down.timer);
    this.#down = undefined;
    this.#logger.info({ downForS: Math.round((Date.now() - down.since) / 1000), errors: down.errors }, 'Redis reachable again');
  }

  close(): void {
    if (this.#down) clearInterval(this.#down.timer);
    this.#down = undefined;
    this.#redis.off('error', this.#onError);
    this.#redis.off('ready', this.#onReady);
  }
}
