/**
 * The refresh-token job: the only path to the token endpoint. Its data holds ids only (client key, tenant id,
 * reason, the version a 401 was seen with); the secret comes from the tenants file in memory.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { z } from 'zod';
import type { ClientCredentials, RefreshRequest, RotateOptions, RotateOutcome, TokenRefresher } from '../src/auth/index.js';
import type { Logger } from '../src/logger.js';

export const refreshTokenJobSchema = z.strictObject({
  clientKey: z.string().min(1),
  tenantId: z.string().min(1),
  reason: z.enum(['scheduled', 'missing', '401', 'manual']),
  seenVersion: z.number().int().min(0).optional(),
});
export type RefreshTokenJobData = z.infer<typeof refreshTokenJobSchema>;

// The producers in src/auth build RefreshRequest; both shapes must stay one.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameShape: Same<RefreshTokenJobData, RefreshRequest> = true;
void _sameShape;

export interface RefreshTokenDeps {
  refresher: Pick<TokenRefresher, 'rotate'>;
  /** The credentials of a tenant from the tenants file in memory; undefined when the tenant is gone. */
  resolveCredentials: (tenantId: string) => ClientCredentials | undefined;
  logger: Logger;
}

/**
 * The BullMQ processor. Parses `job.data` first (a stale payload fails with UnrecoverableError). Credentials
 * refused: the job completes with outcome 'rejected' (the cooldown, not BullMQ, decides when to ask again).
 * Transient errors are rethrown for BullMQ's retries with backoff.
 */
export function createRefreshTokenProcessor(deps: RefreshTokenDeps): (job: Job) => Promise<RotateOutcome> {
  return async (job) => {
    const parsed = refreshTokenJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`refresh-token job ${job.id ?? '?'}: invalid data: ${z.prettifyError(parsed.error)}`);
    const data = parsed.data;
    const credentials = deps.resolveCredentials(data.tenantId);
    if (!credentials) throw new UnrecoverableError(`refresh-token: tenant "${data.tenantId}" is not in the tenants file`);
    if (credentials.clientId !== data.clientKey) {
      throw new UnrecoverableError(`refresh-token: tenant "${data.tenantId}" now uses another client than "${data.clientKey}"`);
    }
    const opts: RotateOptions = data.seenVersion === undefined ? { reason: data.reason } : { reason: data.reason, seenVersion: data.seenVersion };
    const outcome = await deps.refresher.rotate(data.clientKey, credentials, opts);
    if (outcome.outcome !== 'skipped' || data.reason !== 'scheduled') {
      deps.logger.debug({ jobId: job.id, clientKey: data.clientKey, tenantId: data.tenantId, reason: data.reason, ...outcome }, 'refresh-token job done');
    }
    return outcome;
  };
}
