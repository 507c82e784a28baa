/**
 * What the QuickBooks adapter needs of OAuth: a current access token, and a refresh when the API said 401 with it.
 * The platform-OAuth room (shared with Xero) provides it for configured tenants; `StaticQuickBooksAuth` is a fixed
 * token (tests, or a token minted elsewhere).
 */
import type { Secret } from '../../config/secret.js';

export interface QuickBooksAuth {
  /** A valid access token (refreshed first when it is about to expire). */
  accessToken(signal?: AbortSignal): Promise<string>;
  /** The API answered 401 to `token`: make the next `accessToken()` a newer one (single-flight across processes). */
  refreshAfterUnauthorized(token: string, signal?: AbortSignal): Promise<void>;
}

/** One fixed access token; a 401 cannot be cured by refreshing it. */
export class StaticQuickBooksAuth implements QuickBooksAuth {
  constructor(private readonly token: Secret) {}
  async accessToken(): Promise<string> {
    return this.token.reveal();
  }
  async refreshAfterUnauthorized(): Promise<void> {
    // Nothing to refresh: the next call sends the same token and a second 401 fails the call.
  }
}

/** Leases from a shared rate limiter (500 requests a minute and 10 in flight per company, across processes). */
export interface QuickBooksLimiter {
  acquire(signal?: AbortSignal): Promise<{ release(): Promise<void> }>;
}
