/**
 * How the collections client gets its bearer token. The client never calls the token endpoint for its
 * own requests: a provider does (src/auth gives the Redis-backed, rotation-safe one; tests may use
 * `StaticTokenProvider`).
 */
export type AuthRejectReason = 'missing' | 'expired' | 'superseded' | 'invalid';

/** One request's hold on the current token: taken before sending, released when the answer is read. */
export interface TokenLease {
  readonly token: string;
  /** The token's version (generation); a 401 is reported with it so only a current token is rotated. */
  readonly version: number;
  release(): Promise<void>;
}

export interface TokenProvider {
  /** Waits at the gate if a rotation is under way, then takes a lease on the current token. */
  acquire(signal?: AbortSignal): Promise<TokenLease>;
  /**
   * A lease at once, without waiting or any I/O (a pooled one, or a fixed token), or null: then `acquire`. Lets
   * the client skip setting up a wait on the hot path.
   */
  tryAcquire?(): TokenLease | null;
  /**
   * The service answered 401 to a request made with `lease`. The provider rotates only if the stored
   * version is still `lease.version` (compare-and-refresh); the client then acquires again and retries.
   */
  rejected(lease: TokenLease, reason: AuthRejectReason, signal?: AbortSignal): Promise<void>;
}
