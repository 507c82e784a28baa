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
  /** Scheduler ticks: per-tenant schedules enqueue deduplicated sync jobs from here; the fleet's housekeeping. */
  schedule: 'schedule',
  /** Run webhooks: one delivery job per event, retried with back-off (docs/run-webhooks.md); its own slots. */
  notify: 'notify',
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

/** One part of a job id made from a job's data: a fixed word, or a field of the data (with a stand-in when absent). */
export type IdPart<D> = string | { readonly field: keyof D & string; readonly absent?: string };

/**
 * An id made from a job's data by a list of parts (`jobId` of each part's value). One list gives both the id and
 * its rule in words (`idRule`), so the rule an outside producer reads (`jobs contract`) is the one in force.
 */
export function idOf<D>(parts: readonly IdPart<D>[], data: D): string {
  return jobId(
    ...parts.map((p) => {
      if (typeof p === 'string') return p;
      const value = data[p.field];
      if (value === undefined || value === null) {
        if (p.absent === undefined) throw new Error(`an id part: ${p.field} is missing and has no stand-in`);
        return p.absent;
      }
      return String(value);
    }),
  );
}

/** The rule of `idOf(parts, …)` in words: `sync.<tenantId>.<mode>.<since, or "all" when absent>`. */
export function idRule<D>(parts: readonly IdPart<D>[]): string {
  return parts.map((p) => (typeof p === 'string' ? p : p.absent === undefined ? `<${p.field}>` : `<${p.field}, or "${p.absent}" when absent>`)).join('.');
}

/** How `jobId` writes each part, in words (printed with every id rule). */
export const JOB_ID_ESCAPING =
  'parts joined by "."; within a part, each "%", ".", ":" and whitespace character is written as its UTF-8 bytes "%XX" (upper-case hex); an id of digits only has its first digit written so too';
