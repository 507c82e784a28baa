/**
 * The `refresh-token` job: the only path to the token endpoint. Its data (src/auth's RefreshRequest) holds ids
 * only (client key, tenant id, reason, the version a 401 was seen with); the secret comes from the tenants file
 * in memory.
 */
import { authClientKey, type ClientCredentials, type RotateOptions, type RotateOutcome, type TokenRefresher } from '../src/auth/index.js';
import type { Logger } from '../src/logger.js';
import { defineProcessor, hopeless, type JobProcessor } from '../src/queues/index.js';

export interface RefreshTokenDeps {
  refresher: Pick<TokenRefresher, 'rotate'>;
  /** The credentials of a tenant from the tenants file in memory; undefined when the tenant is gone. */
  resolveCredentials: (tenantId: string) => ClientCredentials | undefined;
  logger: Logger;
}

/**
 * A stale payload, a tenant gone or a tenant now on another client fail the job for good. Credentials refused:
 * the job completes with outcome 'rejected' (the cooldown, not BullMQ, decides when to ask again). Transient
 * errors are rethrown for BullMQ's retries with backoff.
 */
export function createRefreshTokenProcessor(deps: RefreshTokenDeps): JobProcessor<RotateOutcome> {
  return defineProcessor('refresh', async (data, { job }) => {
    const credentials = deps.resolveCredentials(data.tenantId);
    if (!credentials) throw hopeless(`refresh-token: tenant "${data.tenantId}" is not in the tenants file`);
    if (authClientKey(credentials.authUrl, credentials.clientId) !== data.clientKey) {
      throw hopeless(`refresh-token: tenant "${data.tenantId}" now uses another client (id or auth URL) than the job's (${data.clientKey})`);
    }
    const opts: RotateOptions = { reason: data.reason, tenantId: data.tenantId, ...(data.seenVersion === undefined ? {} : { seenVersion: data.seenVersion }) };
    const outcome = await deps.refresher.rotate(data.clientKey, credentials, opts);
    if (outcome.outcome !== 'skipped' || data.reason !== 'scheduled') {
      deps.logger.debug({ jobId: job.id, clientKey: data.clientKey, tenantId: data.tenantId, reason: data.reason, ...outcome }, 'refresh-token job done');
    }
    return outcome;
  });
}
