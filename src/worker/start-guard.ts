/**
 * Start is total: a worker either starts whole or leaves nothing behind
 * and exits, non-zero, with one line naming the setting to change; a signal while it starts stops the start at
 * its next step (the wait for Redis included) instead of after it.
 *
 * The guard holds what the start has opened so far (servers, BullMQ workers), newest last. When a step fails or
 * the start is aborted, it closes them newest first and the error goes on to the caller, which then closes the
 * App (Redis connections, queues) and ends the process. Exit codes (README "Operations"): 2 a setting to change
 * (StartError, ConfigError), 1 any other failure (Redis unreachable after the wait), 0 a signal before the worker
 * was up (decision 101).
 */
import { ConfigError } from '../config/env.js';

/** A start step failed because of a setting (a port taken, an address not of this machine). Exit code 2. */
export class StartError extends Error {
  readonly code = 'START_FAILED';
  readonly exitCode = 2;
  constructor(
    readonly setting: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StartError';
  }
}

/** The start was stopped by a signal: the abort reason the guard (and connectRedis) throw. */
export class StartAborted extends Error {
  readonly code = 'START_ABORTED';
  constructor(readonly signal: string) {
    super(`${signal} came while the worker was starting`);
    this.name = 'StartAborted';
  }
}

/** The exit code of a start that failed with `err` (see the header). */
export function startExitCode(err: unknown): number {
  if (err instanceof StartAborted) return 0;
  return err instanceof StartError || err instanceof ConfigError ? 2 : 1;
}

type Closer = () => Promise<unknown>;

export class StartGuard {
  private readonly opened: Closer[] = [];

  constructor(private readonly signal?: AbortSignal) {}

  /** Throws the abort's reason once the start is aborted. */
  check(): void {
    if (this.signal?.aborted) throw this.reason();
  }

  /** Waits for a step, unless the start is aborted first (then throws; the step is left to end on its own). */
  async step<T>(promise: Promise<T>): Promise<T> {
    // A step left behind still settles; its failure then is no one's to report.
    void promise.catch(() => undefined);
    this.check();
    const signal = this.signal;
    if (!signal) return promise;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(this.reason());
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([promise, aborted]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  /** Something the start opened: closed should a later step fail. */
  opens(close: Closer): void {
    this.opened.push(close);
  }

  /** Closes what was opened, newest first; a close that fails does not stop the others. */
  async unwind(): Promise<void> {
    while (this.opened.length > 0) await this.opened.pop()?.().catch(() => undefined);
  }

  /** Runs a start under this guard: on any failure what it opened is closed, and the error goes on. */
  async run<T>(start: (guard: StartGuard) => Promise<T>): Promise<T> {
    try {
      return await start(this);
    } catch (err) {
      await this.unwind();
      throw err;
    }
  }

  private reason(): Error {
    const r: unknown = this.signal?.reason;
    return r instanceof Error ? r : new StartAborted(String(r));
  }
}
