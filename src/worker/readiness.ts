/**
 * What `/readyz` checks (README "Health"): Redis answers within 1 s, every BullMQ worker of this process runs, and
 * the process is not wedged: sync jobs waiting while nothing has started or ended for two minutes (bullmq #4585).
 */
import type { App } from '../app.js';
import type { Readiness } from '../ops/server.js';
import type { QueueWorkers } from './queue-workers.js';

const PING_TIMEOUT_MS = 1_000;
const WEDGED_AFTER_MS = 120_000;

export function readinessOf(app: App, pool: QueueWorkers): () => Promise<Readiness> {
  return async () => {
    const checks: Readiness['checks'] = {};
    try {
      const timeout = new Promise<string>((_, rej) => setTimeout(() => rej(new Error('timeout')), PING_TIMEOUT_MS));
      const pong = await Promise.race([app.redis.ping(), timeout]);
      checks['redis'] = { ok: pong === 'PONG' };
    } catch (err) {
      checks['redis'] = { ok: false, detail: (err as Error).message };
    }
    const running = pool.started && pool.workers.every((w) => w.isRunning());
    checks['workers'] = { ok: running, ...(running ? {} : { detail: pool.started ? 'a worker is not running' : 'starting' }) };
    if (checks['redis'].ok) {
      const waiting = await app.queues.sync.getWaitingCount().catch(() => 0);
      const idleFor = Date.now() - pool.lastActivity;
      const wedged = waiting > 0 && idleFor > WEDGED_AFTER_MS;
      checks['progress'] = { ok: !wedged, ...(wedged ? { detail: `${waiting} jobs waiting, no activity for ${Math.round(idleFor / 1000)} s` } : {}) };
    }
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  };
}
