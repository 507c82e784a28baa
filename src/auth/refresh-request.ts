/**
 * A rotation request: the data of a refresh-token job (ids only, never a secret), and the port through which
 * auth reaches the refresh-token queue. The queue layer (src/queues) implements the port, so auth never
 * imports queues and the job's schema is this one.
 */
import { z } from 'zod';
import { ROTATION_REASONS } from './metrics.js';

export const refreshRequestSchema = z.strictObject({
  clientKey: z.string().min(1),
  /** Whose tenants-file entry holds the credentials (any tenant of the client). */
  tenantId: z.string().min(1),
  reason: z.enum(ROTATION_REASONS),
  /** For '401': the version the request used (compare-and-refresh); for a planned check: the version it checks. */
  seenVersion: z.number().int().min(0).optional(),
});
export type RefreshRequest = z.infer<typeof refreshRequestSchema>;

/** One client whose token is rotated proactively (any tenant of it gives the credentials). */
export interface ScheduledClient {
  clientKey: string;
  tenantId: string;
}

/** The refresh-token queue as auth sees it (src/queues: `refreshJobs`). */
export interface RefreshJobs {
  /** Enqueues an on-demand rotation, deduplicated per client. */
  request(request: RefreshRequest): Promise<unknown>;
  /** Enqueues the planned check of one token version (`reason` 'scheduled'), to run in `delayMs`; one per version. */
  plan(request: RefreshRequest, delayMs: number): Promise<unknown>;
  /** One scheduler per client listed (`every` = `everyMs`); the schedulers of clients gone are removed. */
  schedule(clients: readonly ScheduledClient[], everyMs: number): Promise<{ upserted: string[]; removed: string[]; busy?: number[] }>;
}
