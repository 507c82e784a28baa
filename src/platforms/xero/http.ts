/**
 * GET requests to Xero's Accounting API for one connection: a lease from the shared rate limiter, a valid access
 * token, the `xero-tenant-id` header, timeouts, and errors that say what to do.
 * - 401: the token is refreshed (compare-and-refresh on its version) and the call repeated once.
 * - 403: the app lost access to the organisation: PLATFORM_AUTH_FAILED.
 * - 429: `Retry-After` and `X-Rate-Limit-Problem` become a shared block and a PlatformRateLimitedError.
 * - 5xx, network errors, timeouts: retried a couple of times (bounded), then PLATFORM_UNAVAILABLE (retryable).
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { PlatformError, PlatformRateLimitedError } from '../types.js';
import type { AccessToken, PlatformAuth } from '../oauth/oauth.js';
import { describe, retryAfterMs, type LimitScope, type PlatformRateLimiter } from '../oauth/rate-limiter.js';
import { backOff, errorName, headerValue, retryable } from '../wire.js';

export interface XeroHttpSettings {
  /** Whole request (headers and body) deadline. Default 20 s. */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Retries after a 5xx or network error. Default 2. */
  retries: number;
  /** First backoff; doubles each retry. Default 250 ms. */
  retryBaseMs: number;
}

export const DEFAULT_HTTP_SETTINGS: XeroHttpSettings = {
  requestTimeoutMs: 20_000,
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 15_000,
  retries: 2,
  retryBaseMs: 250,
};

export interface XeroHttpOptions {
  apiUrl: string;
  xeroTenantId: string;
  auth: PlatformAuth;
  limiter: PlatformRateLimiter;
  dispatcher: Dispatcher;
  settings?: Partial<XeroHttpSettings>;
  logger?: Logger;
}

/** What a GET gave: the parsed JSON body, or `not-modified` (304). */
export type XeroGetResult = { kind: 'json'; body: unknown } | { kind: 'not-modified' };

const PROBLEMS: Record<string, LimitScope> = { minute: 'minute', day: 'day', concurrent: 'concurrent', appminute: 'app' };

export class XeroHttp {
  private readonly settings: XeroHttpSettings;

  constructor(private readonly options: XeroHttpOptions) {
    this.settings = { ...DEFAULT_HTTP_SETTINGS, ...options.settings };
  }

  async get(path: string, query: URLSearchParams, headers: Record<string, string>, signal?: AbortSignal): Promise<XeroGetResult> {
    // Spaces as %20 (`order=UpdatedDateUTC%20ASC`), not form-encoding's `+`; a literal `+` is already %2B.
    const url = `${this.options.apiUrl}${path}?${query.toString().replace(/\+/g, '%20')}`;
    let failures = 0;
    let rejected: number | undefined;
    let refreshedAfter401 = false;
    for (;;) {
      signal?.throwIfAborted();
      // The token first: a refresh (or a wait for another process's) must not hold one of the 5 in-flight leases.
      let access: AccessToken;
      try {
        access = await this.options.auth.accessToken(rejected);
      } catch (err) {
        if (!(err instanceof PlatformError) || err.code !== 'PLATFORM_UNAVAILABLE') throw err;
        failures = await backOff(failures, err, this.settings, (n) => this.options.logger?.warn({ path, failures: n, reason: err.message }, 'xero: retrying the token'));
        continue;
      }
      const lease = await this.options.limiter.acquire(signal);
      let retryReason: PlatformError;
      try {
        const deadline = AbortSignal.timeout(this.settings.requestTimeoutMs);
        let res: Dispatcher.ResponseData;
        let text: string;
        try {
          res = await request(url, {
            method: 'GET',
            dispatcher: this.options.dispatcher,
            headers: { ...headers, authorization: `Bearer ${access.token}`, 'xero-tenant-id': this.options.xeroTenantId, accept: 'application/json' },
            signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
            headersTimeout: this.settings.headersTimeoutMs,
            bodyTimeout: this.settings.bodyTimeoutMs,
          });
          text = await res.body.text();
        } catch (err) {
          if (signal?.aborted) throw err;
          throw new PlatformError('PLATFORM_UNAVAILABLE', `xero: GET ${path} failed (${errorName(err)})`, true, { cause: err });
        }
        await this.options.limiter.observe(res.headers);
        const status = res.statusCode;
        if (status === 200) {
          try {
            return { kind: 'json', body: JSON.parse(text) as unknown };
          } catch (err) {
            throw new PlatformError('PLATFORM_BAD_RESPONSE', `xero: GET ${path} answered 200 with a body that is not JSON`, false, { cause: err });
          }
        }
        if (status === 304) return { kind: 'not-modified' };
        if (status === 401) {
          if (!refreshedAfter401) {
            refreshedAfter401 = true;
            rejected = access.version;
            this.options.logger?.info({ path }, 'xero: 401, refreshing the access token once');
            continue;
          }
          throw new PlatformError(
            'PLATFORM_AUTH_FAILED',
            `xero: GET ${path} answered 401 even with a freshly refreshed token; reconnect the app to the organisation and put a new refresh token in the tenants file`,
            false,
          );
        }
        if (status === 403) {
          throw new PlatformError(
            'PLATFORM_AUTH_FAILED',
            `xero: GET ${path} answered 403: the connection has no access to Xero organisation ${this.options.xeroTenantId} ` +
              '(disconnected, or without the accounting.contacts.read and accounting.transactions.read scopes); reconnect the app and put the new refresh token in the tenants file',
            false,
          );
        }
        if (status === 429) throw await this.rateLimited(path, res.headers);
        if (status >= 500) {
          retryReason = new PlatformError('PLATFORM_UNAVAILABLE', `xero: GET ${path} answered ${status}`, true);
        } else {
          throw new PlatformError('PLATFORM_BAD_RESPONSE', `xero: GET ${path} answered ${status}: ${text.slice(0, 200)}`, false);
        }
      } catch (err) {
        retryReason = retryable(err);
      } finally {
        await lease.release().catch(() => undefined);
      }
      const reason = retryReason;
      failures = await backOff(failures, reason, this.settings, (n) => this.options.logger?.warn({ path, failures: n, reason: reason.message }, 'xero: retrying'));
    }
  }

  private async rateLimited(path: string, headers: Record<string, string | string[] | undefined>): Promise<PlatformRateLimitedError> {
    const problem = headerValue(headers, 'x-rate-limit-problem')?.trim().toLowerCase() ?? '';
    const scope = PROBLEMS[problem] ?? 'minute';
    const fallback = scope === 'day' ? this.options.limiter.limits.dayBlockMs : scope === 'concurrent' ? 1_000 : 60_000;
    const waitMs = retryAfterMs(headerValue(headers, 'retry-after')) ?? fallback;
    await this.options.limiter.block(scope, waitMs);
    this.options.logger?.warn({ path, scope, waitMs }, 'xero: rate limited');
    return new PlatformRateLimitedError(scope, waitMs, `xero: ${describe(scope)} limit reached (429 on GET ${path}); retry in ${Math.ceil(waitMs / 1000)} s`);
  }
}
