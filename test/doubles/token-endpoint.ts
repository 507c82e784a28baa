/**
 * The bookkeeping every token endpoint double keeps (test/platforms/xero/fake-xero.ts, quickbooks-oauth.ts): the
 * refresh tokens issued and their state, the access tokens and their expiry, and every call with its outcome, so
 * tests can count the sends of each refresh token.
 */
export interface RefreshRecord {
  usedAt?: number;
  /** The refresh token issued in exchange (Xero's grace looks at it). */
  child?: string;
  revoked?: boolean;
}

export class TokenEndpointBook<Outcome extends string> {
  readonly tokenCalls: { token: string; outcome: Outcome; at: number }[] = [];
  /** Every refresh and access token issued, in order. */
  readonly issuedRefresh: string[] = [];
  readonly issuedAccess: string[] = [];
  protected readonly refresh = new Map<string, RefreshRecord>();
  /** Access token -> expiry (epoch ms). */
  protected readonly access = new Map<string, number>();

  constructor(private readonly newRefreshToken: () => string) {}

  /** A fresh refresh token, as if a user had just connected the app. */
  issueRefreshToken(): string {
    const token = this.newRefreshToken();
    this.refresh.set(token, {});
    this.issuedRefresh.push(token);
    return token;
  }

  /** How many times this refresh token was sent to the token endpoint. */
  usesOf(token: string): number {
    return this.tokenCalls.filter((c) => c.token === token).length;
  }

  /** Every refresh token sent, with its count. */
  uses(): Map<string, number> {
    const m = new Map<string, number>();
    for (const c of this.tokenCalls) m.set(c.token, (m.get(c.token) ?? 0) + 1);
    return m;
  }

  /** The connection is revoked: every refresh token of it stops working (access tokens live on until expired). */
  revokeAll(): void {
    for (const r of this.refresh.values()) r.revoked = true;
  }

  /** Every access token issued so far stops working (the next API call answers 401). */
  expireAccessTokens(): void {
    this.access.clear();
  }

  /** A new grant (a user just consented): a refresh token and an access token valid for `ttlS` (the code exchange). */
  issueGrant(ttlS: number, accessToken = `at-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`): { refreshToken: string; accessToken: string; expiresInS: number } {
    const refreshToken = this.issueRefreshToken();
    this.issueAccess(accessToken, Date.now(), ttlS);
    return { refreshToken, accessToken, expiresInS: ttlS };
  }

  /** Whether this access token is issued and unexpired. */
  isAccessValid(token: string): boolean {
    const until = this.access.get(token);
    return until !== undefined && until > Date.now();
  }

  /** Records a new access token valid for `ttlS` from `now`. */
  protected issueAccess(token: string, now: number, ttlS: number): void {
    this.access.set(token, now + ttlS * 1000);
    this.issuedAccess.push(token);
  }
}
