/**
 * The ordered shutdown of a worker process, under a deadline (BullMQ's `worker.close()` waits for active jobs with
 * no timeout): stop the watches, refuse new webhook events (those kept already have their jobs), tell running jobs
 * to stop at a page boundary, let the BullMQ workers finish, force them at the deadline (their jobs are picked up
 * again elsewhere), and close the ops server last so /readyz answers until the end. The App (queues, pools, Redis)
 * is its owner's to close.
 */
import type { Logger } from '../logger.js';
import type { OpsServer } from '../ops/server.js';
import type { WebhookServer } from '../webhooks/index.js';
import type { QueueWorkers } from './queue-workers.js';

export interface ShutdownParts {
  logger: Logger;
  /** The watchdog's and the tenants watch's stops. */
  stops: readonly (() => void)[];
  webhooks: WebhookServer | undefined;
  /** Aborted to tell running jobs to stop (the processors' shutdown signal). */
  jobs: AbortController;
  pool: QueueWorkers;
  ops: OpsServer | undefined;
}

export async function shutdown(parts: ShutdownParts, deadlineMs: number): Promise<void> {
  for (const stop of parts.stops) stop();
  await parts.webhooks?.close();
  parts.jobs.abort(new Error('shutting down'));
  const closed = parts.pool.close();
  const timedOut = await Promise.race([closed.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), deadlineMs).unref())]);
  if (timedOut) {
    parts.logger.warn({ deadlineMs }, 'workers did not stop within the deadline; forcing (their jobs will be picked up again)');
    await parts.pool.close(true);
  }
  await parts.ops?.close();
}
