/**
 * GET requests to the QuickBooks Online Accounting API for one company (realm): a lease from the shared limiter,
 * the access token, `Accept: application/json`, the pinned `minorversion`, timeouts, and Fault bodies classified:
 * - AuthenticationFault (401): the token is refreshed once and the call repeated; again 401 is PLATFORM_AUTH_FAILED.
 * - AuthorizationFault (403): the app lost its scope on the company: PLATFORM_AUTH_FAILED.
 * - ValidationFault (400): `QuickBooksFaultError` (not retried): the adapter narrows a page down to the record.
 * - SystemFault (500, 503), network errors, timeouts: retried with backoff (bounded), then PLATFORM_UNAVAILABLE.
 * - 429: waits `Retry-After` (60 s without one): PlatformRateLimitedError.
 * Every failure is logged with Intuit's `intuit_tid` (what Intuit support asks for), never with a token.
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { PlatformError, PlatformRateLimitedError } from '../types.js';
import type { QuickBooksAuth, QuickBooksLimiter } from './auth.js';
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
  auth: QuickBooksAuth;
  limiter?: QuickBooksLimiter;
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function retryAfter(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+(\.\d+)?$/.test(value.trim())) return undefined;
  return Math.ceil(Number(value) * 1000);
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
    for (;;) {
      signal?.throwIfAborted();
      const token = await this.options.auth.accessToken(signal);
      const lease = await this.options.limiter?.acquire(signal);
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
        tid = header(res.headers, 'intuit_tid');
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
          const waitMs = retryAfter(header(res.headers, 'retry-after')) ?? 60_000;
          throw new PlatformRateLimitedError('minute', waitMs, `quickbooks: ${what} answered 429 (500 requests a minute or 10 at once per company); retry in ${Math.ceil(waitMs / 1000)} s (intuit_tid ${tid ?? 'none'})`);
        }
        if (type === 'AuthenticationFault') {
          if (!refreshed) {
            refreshed = true;
            await this.options.auth.refreshAfterUnauthorized(token, signal);
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
        if (!(err instanceof PlatformError) || err.code !== 'PLATFORM_UNAVAILABLE' || err instanceof PlatformRateLimitedError) throw err;
        retryReason = err;
      } finally {
        await lease?.release().catch(() => undefined);
      }
      failures += 1;
      if (failures > this.settings.retries) throw retryReason;
      log?.warn({ call: what, failures, reason: retryReason.message }, 'quickbooks: retrying');
      await sleep(this.settings.retryBaseMs * 2 ** (failures - 1));
    }
  }
}

function errorName(err: unknown): string {
  if (err instanceof Error) return (err as Error & { code?: string }).code ?? err.name;
  return 'error';
}
