import { CollectionsError, TransientError } from '../collections/errors.js';
import { TOKEN_ROUTE } from '../collections/token.js';

/**
 * The token endpoint refused this client's credentials and the client is in its cooldown. Code
 * AUTH_CREDENTIALS_REJECTED (not retryable until the secret is fixed in the tenants file or the cooldown
 * passes). Says which tenant and client and what to do; never holds the secret.
 */
export class CredentialsRejectedError extends CollectionsError {
  readonly clientKey: string;
  readonly tenantId: string | undefined;
  readonly failures: number;
  /** No token request before this time (ms since epoch), unless the secret changes. */
  readonly nextAttemptAt: number;

  /** `clientId`: the service's client id, named in the message (the client key is a digest: authClientKey). */
  constructor(init: { clientKey: string; clientId?: string; tenantId?: string | undefined; failures: number; nextAttemptAt: number; reason: string }) {
    const client = init.clientId ?? init.clientKey;
    const who = init.tenantId === undefined ? `client "${client}"` : `tenant "${init.tenantId}" (client "${client}")`;
    super({
      code: 'AUTH_CREDENTIALS_REJECTED',
      retryable: false,
      route: TOKEN_ROUTE,
      message:
        `the collections service refused the credentials of ${who} (${init.reason}; ${init.failures} refusal(s)): ` +
        `fix collections.clientSecret in the tenants file; token requests are held until ` +
        `${new Date(init.nextAttemptAt).toISOString()} unless the secret changes`,
    });
    this.name = 'CredentialsRejectedError';
    this.clientKey = init.clientKey;
    this.tenantId = init.tenantId;
    this.failures = init.failures;
    this.nextAttemptAt = init.nextAttemptAt;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), clientKey: this.clientKey, tenantId: this.tenantId, failures: this.failures, nextAttemptAt: this.nextAttemptAt };
  }
}

/** No token for the client within the wait bound (no refresher running, token endpoint down): retryable. */
export function noTokenWithin(clientKey: string, waitedMs: number, why: string): TransientError {
  return new TransientError({ route: TOKEN_ROUTE, message: `no token for client "${clientKey}" within ${waitedMs} ms (${why})` });
}

/** True for an error from the token call that means "wrong credentials" (matched on the stable code). */
export function isCredentialsRejected(err: unknown): boolean {
  return err instanceof CollectionsError && err.code === 'AUTH_CREDENTIALS_REJECTED';
}
