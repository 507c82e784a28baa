/**
 * Queue names and job-id rules. Every queue shares one BullMQ `prefix` (KEY_PREFIX, a `{hash tag}` by default),
 * so all keys of all queues land in one Redis Cluster slot (bullmq #2589).
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

/** A BullMQ job id from parts: no colon, never a plain integer. */
export function jobId(...parts: (string | number)[]): string {
  const id = parts.map((p) => String(p).replace(/[:\s]/g, '_')).join('.');
  return /^\d+$/.test(id) ? `j.${id}` : id;
}
