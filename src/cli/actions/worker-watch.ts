/**
 * `--wait` needs a worker to run the job. With none consuming the queue the wait would be silent for hours
 * (issue 12), so while waiting the CLI asks BullMQ which workers the queue has (CLIENT LIST): none after a grace
 * period (a worker starting beside the command has time to register) ends the wait with a message saying so,
 * or, with `--keep-waiting`, says so once and goes on waiting.
 */

/** What the watch needs of a queue (a BullMQ Queue has it). */
export interface WorkerCounting {
  readonly name: string;
  getWorkersCount(): Promise<number>;
}

export class NoWorkerError extends Error {
  readonly code = 'CLI_NO_WORKER';
}

export interface WorkerWatch {
  /** Aborted (with a NoWorkerError) when no worker showed up within the grace period and not keepWaiting. */
  readonly signal: AbortSignal;
  stop(): void;
}

export const NO_WORKER_GRACE_MS = 5_000;

export function watchForWorker(
  queue: WorkerCounting,
  o: { where: string; keepWaiting: boolean; say: (line: string) => void; graceMs?: number; pollMs?: number },
): WorkerWatch {
  const controller = new AbortController();
  const graceMs = o.graceMs ?? NO_WORKER_GRACE_MS;
  const started = Date.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const message = `no worker is consuming the ${queue.name} queue (${o.where}): the job stays queued and runs when a worker starts (collections-sync worker, with the same REDIS_URL and KEY_PREFIX)`;
  let said = false;
  const check = async (): Promise<void> => {
    if (stopped) return;
    let count: number;
    try {
      count = await queue.getWorkersCount();
    } catch {
      count = 1; // cannot tell (no CLIENT LIST): do not claim there is no worker
    }
    if (stopped) return;
    if (count > 0) {
      if (said) o.say(`a worker is consuming the ${queue.name} queue now`);
      return; // seen one: the wait goes on as before
    }
    if (Date.now() - started >= graceMs && !said) {
      said = true;
      if (!o.keepWaiting) {
        controller.abort(new NoWorkerError(`${message}. Not waiting; add --keep-waiting to wait for one.`));
        return;
      }
      o.say(`${message}; waiting for one (--keep-waiting)`);
    }
    timer = setTimeout(() => void check(), o.pollMs ?? 500);
  };
  void check();
  return {
    signal: controller.signal,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** A Redis URL with its password hidden. */
export function safeRedisUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
