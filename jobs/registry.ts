/**
 * The typed job registry (STYLE.md 3): each job name maps to the zod schema of its data. Producers and
 * processors take their types from here; a processor parses `job.data` first, so a stale payload fails loudly.
 * Job data holds ids only, never secrets.
 */
import { z } from 'zod';
import { tenantIdSchema } from '../src/config/tenants.js';

export const syncModeSchema = z.enum(['incremental', 'full', 'reconcile', 'replay']);
export type SyncMode = z.infer<typeof syncModeSchema>;

export const syncJobSchema = z.strictObject({
  tenantId: tenantIdSchema,
  mode: syncModeSchema,
  /** Backfill from this date (YYYY-MM-DD) instead of the beginning; full mode only. */
  since: z.iso.date().optional(),
  trigger: z.enum(['schedule', 'cli', 'reconcile', 'api', 'test']).default('cli'),
  requestedAt: z.number().int().positive(),
});
export type SyncJobData = z.infer<typeof syncJobSchema>;

export const scheduleTickSchema = z.strictObject({
  tenantId: tenantIdSchema,
  mode: z.enum(['incremental', 'reconcile']),
});
export type ScheduleTickData = z.infer<typeof scheduleTickSchema>;

export const JOBS = {
  sync: { name: 'sync-run', schema: syncJobSchema },
  tick: { name: 'schedule-tick', schema: scheduleTickSchema },
} as const;

/** Parses job data or throws an error naming the job and the bad fields (never the values). */
export function parseJobData<T>(schema: z.ZodType<T>, data: unknown, what: string): T {
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new Error(`invalid ${what} job data: ${fields}`);
  }
  return parsed.data;
}
