/**
 * The wedge watchdog (decision 46). After a Redis Cluster master's restart a BullMQ worker can stay parked in its
 * blocking wait for good (bullmq #3088, #2964, #4138: isRunning() true, the blocking connection "ready", no job
 * taken, waiting and due delayed jobs left alone). Seen from outside: jobs wait while the worker has a free slot
 * and starts none. After WORKER_WEDGE_S of that, the slot's worker is replaced in-process (QueueWorkers.replace).
 */
import type { App } from '../app.js';
import type { QueueKey, QueueWorkers, Slot } from './queue-workers.js';

export interface Watchdog {
  /** Stops the checks; a check under way replaces nothing more. */
  stop(): void;
}

/** Why jobs count as waiting on `queue` (waiting, prioritized, or a delayed job overdue), or undefined. */
async function backlogOf(app: App, queue: QueueKey): Promise<string | undefined> {
  const q = app.queues[queue];
  const counts = await q.getJobCounts('waiting', 'prioritized');
  const waiting = (counts['waiting'] ?? 0) + (counts['prioritized'] ?? 0);
  if (waiting > 0) return `${waiting} jobs waiting`;
  // BullMQ scores a delayed job by its due time × 0x1000 (+ a counter).
  const first = await app.redis.zrange(q.toKey('delayed'), 0, 0, 'WITHSCORES');
  const dueAt = first[1] === undefined ? undefined : Math.floor(Number(first[1]) / 0x1000);
  return dueAt !== undefined && dueAt < Date.now() - 1_000 ? `a delayed job due ${Math.round((Date.now() - dueAt) / 1000)} s ago` : undefined;
}

export function startWedgeWatchdog(app: App, pool: QueueWorkers): Watchdog {
  const wedgeMs = app.env.WORKER_WEDGE_S * 1000;
  const checkEveryMs = Math.max(1_000, Math.min(5_000, Math.floor(wedgeMs / 4)));
  let stopped = false;
  let checking = false;

  /** One slot's check: its backlog clock, and a replacement once jobs have waited WORKER_WEDGE_S with none started. */
  const checkSlot = async (slot: Slot): Promise<void> => {
    // Busy (every slot taken) or a job started or ended lately: not wedged.
    if (slot.inFlight >= pool.concurrencyOf(slot.queue) || Date.now() - slot.progressAt < checkEveryMs) {
      slot.backlogSince = undefined;
      return;
    }
    let why: string | undefined;
    try {
      why = app.outage.down ? undefined : await backlogOf(app, slot.queue);
    } catch {
      why = undefined; // Redis away: the outage log speaks for it
    }
    const now = Date.now();
    if (why === undefined) slot.backlogSince = undefined;
    else slot.backlogSince ??= now;
    if (why === undefined || stopped || now - (slot.backlogSince ?? now) < wedgeMs || now - slot.progressAt < wedgeMs) return;
    slot.backlogSince = undefined;
    const queue = app.queues[slot.queue].name;
    app.logger.warn({ queue, reason: 'wedged', why, idleForS: Math.round((now - slot.progressAt) / 1000), jobsInFlight: slot.inFlight }, 'worker wedged: jobs wait but it takes none; replacing it in-process');
    app.metrics?.workerReplacements.inc({ queue, reason: 'wedged' });
    pool.replace(slot);
  };

  const check = async (): Promise<void> => {
    if (checking || stopped) return;
    checking = true;
    try {
      for (const slot of pool.slots) await checkSlot(slot);
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), checkEveryMs);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
