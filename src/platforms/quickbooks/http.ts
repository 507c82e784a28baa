/**
 * GET requests to the QuickBooks Online Accounting API for one company (realm): a lease from the shared limiter,
 * the access token, `Accept: application/json`, the pinned `minorversion`, timeouts, and Fault bodies classified:
 * - AuthenticationFault (401): a fresh token (`access.onUnauthorized`) and the call repeated once; again 401 is
 *   PLATFORM_AUTH_FAILED.
 * - AuthorizationFault (403): the app lost its scope on the company: PLATFORM_AUTH_FAILED.
 * - ValidationFault (400): `QuickBooksFaultError` (not retried): the adapter narrows a page down to the record.
 * - SystemFault (500, 503), network errors, timeouts: retried with backoff (bounded), then PLATFORM_UNAVAILABLE.
 * - 429: every process waits `Retry-After` (60 s without one): `access.throttled`'s PlatformRateLimitedError.
 * Every failure is logged with Intuit's `intuit_tid` (what Intuit support asks for), never with a token.
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { PlatformError, PlatformRateLimitedError } from '../types.js';
import { backOff, errorName, headerValue, retryable } from '../wire.js';
import type { QuickBooksAccess } from './access.js';
import { parseFault, type QboFault } from './schemas.js';

/** The minor version every request pins (Intuit's JSON changes shape between minor versions). */
export const QBO_MINOR_VERSION = '75';

export interface QuickBooksHttpSettings {
  requestTimeoutMs: number;
  /** Retries after a SystemFault, 5xx or network error. Default 2. */
  retries: number;
  /** First backoff; doubles each retry. Default 250 ms. */
  retryBaseMs: number;
}

export const DEFAULT_QBO_HTTP_SETTINGS: QuickBooksHttpSettings = { requestTimeoutMs: 30_000, retries: 2, retryBaseMs: 250 };

export interface QuickBooksHttpOptions {
  /** `https://quickbooks.api.intuit.com` (production) or `https://sandbox-quickbooks.api.intuit.com`. */
  apiUrl: string;
  realmId: string;
  /** Tokens and leases (the shared platform-OAuth room and limiter). */
  access: QuickBooksAccess;
  dispatcher?: Dispatcher;
  settings?: Partial<QuickBooksHttpSettings>;
  logger?: Logger;
}

/**
 * A Fault body the adapter may handle itself (a ValidationFault, or a SystemFault once its retries are spent):
 * its type, codes, message and `intuit_tid`. A SystemFault stays PLATFORM_UNAVAILABLE (retryable).
 */
export class QuickBooksFaultError extends PlatformError {
  constructor(
    readonly fault: QboFault,
    readonly status: number,
    readonly intuitTid: string | undefined,
    what: string,
  ) {
    const system = fault.type === 'SystemFault';
    super(system ? 'PLATFORM_UNAVAILABLE' : 'PLATFORM_BAD_RESPONSE', `quickbooks: ${what} answered ${status} ${fault.type}: ${fault.message} (intuit_tid ${intuitTid ?? 'none'})`, system);
    this.name = 'QuickBooksFaultError';
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class QuickBooksHttp {
  private readonly settings: QuickBooksHttpSettings;
  private readonly base: string;

  constructor(private readonly options: QuickBooksHttpOptions) {
    this.settings = { ...DEFAULT_QBO_HTTP_SETTINGS, ...options.settings };
    this.base = `${options.apiUrl.replace(/\/+$/, '')}/v3/company/${encodeURIComponent(options.realmId)}`;
  }

  /** `GET /v3/company/<realm>/<path>?<params>&minorversion=NN`: the parsed JSON body. `what` names the call in errors. */
  async get(path: string, params: Record<string, string>, what: string, signal?: AbortSignal): Promise<unknown> {
    const query = new URLSearchParams({ ...params, minorversion: QBO_MINOR_VERSION }).toString().replace(/\+/g, '%20');
    const url = `${this.base}/${path}?${query}`;
    const log = this.options.logger;
    let failures = 0;
    let refreshed = false;
    let token: string | undefined;
    let rejected: string | undefined;
    for (;;) {
      signal?.throwIfAborted();
      // The token first: a refresh (or a wait for another process's) must not hold one of the 10 in-flight leases.
      if (rejected !== undefined) token = await this.options.access.onUnauthorized(rejected);
      rejected = undefined;
      token ??= await this.options.access.token();
      const lease = await this.options.access.lease(signal);
      let retryReason: PlatformError;
      let tid: string | undefined;
      try {
        const deadline = AbortSignal.timeout(this.settings.requestTimeoutMs);
        let res: Dispatcher.ResponseData;
        let text: string;
        try {
          res = await request(url, {
            method: 'GET',
            ...(this.options.dispatcher ? { dispatcher: this.options.dispatcher } : {}),
            headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
            signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
          });
          text = await res.body.text();
        } catch (err) {
          if (signal?.aborted) throw err;
          throw new PlatformError('PLATFORM_UNAVAILABLE', `quickbooks: ${what} failed (${errorName(err)})`, true, { cause: err });
        }
        tid = headerValue(res.headers, 'intuit_tid');
        const status = res.statusCode;
        const body = parseJson(text);
        // QuickBooks may answer 200 with a Fault body: a Fault is a Fault whatever the status.
        const fault = parseFault(body);
        if (status === 200 && fault === undefined) {
          if (body === undefined) throw new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: ${what} answered 200 with a body that is not JSON (intuit_tid ${tid ?? 'none'})`, false);
          return body;
        }
        const type = fault?.type ?? (status === 401 ? 'AuthenticationFault' : status === 403 ? 'AuthorizationFault' : status >= 500 ? 'SystemFault' : 'unknown');
        const detail = fault?.message ?? text.slice(0, 200);
        log?.warn({ call: what, status, fault: type, detail, intuit_tid: tid }, 'quickbooks: request failed');
        if (status === 429) {
          const limited = await this.options.access.throttled(headerValue(res.headers, 'retry-after'));
          throw new PlatformRateLimitedError(limited.scope, limited.retryAfterMs, `quickbooks: ${what} answered 429: ${limited.message} (intuit_tid ${tid ?? 'none'})`);
        }
        if (type === 'AuthenticationFault') {
          if (!refreshed) {
            refreshed = true;
            rejected = token;
            continue;
          }
          throw new PlatformError(
            'PLATFORM_AUTH_FAILED',
            `quickbooks: ${what} answered ${status} AuthenticationFault even with a refreshed token (${detail}; intuit_tid ${tid ?? 'none'}); reconnect the app to company ${this.options.realmId} and put the new refresh token in the tenants file`,
            false,
          );
        }
        if (type === 'AuthorizationFault') {
          throw new PlatformError(
            'PLATFORM_AUTH_FAILED',
            `quickbooks: ${what} answered ${status} AuthorizationFault (${detail}; intuit_tid ${tid ?? 'none'}): the app has no com.intuit.quickbooks.accounting access to company ${this.options.realmId}; reconnect it`,
            false,
          );
        }
        if (fault?.type === 'SystemFault') {
          retryReason = new QuickBooksFaultError(fault, status, tid, what);
        } else if (type === 'SystemFault' || status >= 500) {
          retryReason = new PlatformError('PLATFORM_UNAVAILABLE', `quickbooks: ${what} answered ${status} SystemFault: ${detail} (intuit_tid ${tid ?? 'none'})`, true);
        } else if (fault !== undefined) {
          throw new QuickBooksFaultError(fault, status, tid, what);
        } else {
          throw new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: ${what} answered ${status}: ${detail} (intuit_tid ${tid ?? 'none'})`, false);
        }
      } catch (err) {
        retryReason = retryable(err);
      } finally {
        await lease.release().catch(() => undefined);
      }
      const reason = retryReason;
      failures = await backOff(failures, reason, this.settings, (n) => log?.warn({ call: what, failures: n, reason: reason.message }, 'quickbooks: retrying'));
    }
  }
}
