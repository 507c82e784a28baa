/**
 * Queue names and job-id rules. Each queue is its own Redis Cluster hash tag (`queuePrefix` in src/redis/keys.ts:
 * a queue's keys on one slot, bullmq #2589; no flow spans two queues).
 */
export const QUEUES = {
  /** Sync runs, one job per tenant run. */
  sync: 'sync',
  /** Token rotations of the collections service (only path to the token endpoint). */
  refreshToken: 'refresh-token',
  /** AI collection calls. */
  calls: 'calls',
  /** Scheduler ticks: per-tenant schedules enqueue deduplicated sync jobs from here. */
  schedule: 'schedule',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/**
 * A BullMQ job id from parts, joined by `.`: no colon, never a plain integer, and injective (issue 17: `a:b` and
 * `a_b` once shared an id). Each part is percent-escaped where it holds `%`, `.`, `:` or whitespace, so parts
 * never run into each other; an id of digits only gets its first digit escaped.
 */
export function jobId(...parts: (string | number)[]): string {
  const id = parts.map((p) => String(p).replace(/[%.:\s]/gu, (c) => escapeChar(c))).join('.');
  return /^\d+$/.test(id) ? `${escapeChar(id[0]!)}${id.slice(1)}` : id;
}

function escapeChar(c: string): string {
  return [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}
