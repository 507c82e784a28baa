/**
 * Xero's Accounting API as a platform descriptor for the shared driver (oauth/driver.ts): the `xero-tenant-id`
 * header, and how Xero's answers read.
 * - 200: the JSON body; 304: `not-modified` (an `If-Modified-Since` read with nothing newer).
 * - 401: refreshed once by the driver; 403: the app lost access to the organisation: PLATFORM_AUTH_FAILED.
 * - 429: `X-Rate-Limit-Problem` names the limit (minute, day, concurrent, app) that every process then waits out.
 * - 5xx: retried (bounded), then PLATFORM_UNAVAILABLE (retryable). Anything else: PLATFORM_BAD_RESPONSE.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { PlatformError } from '../types.js';
import { headerValue } from '../wire.js';
import type { OAuthAccess } from '../oauth/access.js';
import { PlatformDriver, type DriverSettings, type PlatformAnswer, type PlatformDescriptor, type Verdict } from '../oauth/driver.js';
import type { LimitScope } from '../oauth/rate-limiter.js';

export interface XeroHttpSettings extends DriverSettings {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export const DEFAULT_HTTP_SETTINGS: XeroHttpSettings = {
  requestTimeoutMs: 20_000,
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 15_000,
  retries: 2,
  retryBaseMs: 250,
};

/** How long every process waits after a 429 without Retry-After, by the limit Xero names. */
export function xeroThrottleDefaultMs(scope: LimitScope, dayBlockMs: number): number {
  return scope === 'day' ? dayBlockMs : scope === 'concurrent' ? 1_000 : 60_000;
}

const PROBLEMS: Record<string, LimitScope> = { minute: 'minute', day: 'day', concurrent: 'concurrent', appminute: 'app' };

/** Xero, for one organisation. */
export function xeroPlatform(xeroTenantId: string): PlatformDescriptor {
  return {
    name: 'xero',
    headers: { 'xero-tenant-id': xeroTenantId, accept: 'application/json' },
    unauthorized: (what) =>
      new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `xero: ${what} answered 401 even with a freshly refreshed token; reconnect the app to the organisation and put a new refresh token in the tenants file`,
        false,
      ),
  };
}

/** What a GET gave: the parsed JSON body, or `not-modified` (304). */
export type XeroGetResult = { kind: 'json'; body: unknown } | { kind: 'not-modified' };

function classify(what: string, xeroTenantId: string, a: PlatformAnswer): Verdict<XeroGetResult> {
  if (a.status === 200) {
    try {
      return { kind: 'ok', value: { kind: 'json', body: JSON.parse(a.text) as unknown } };
    } catch (err) {
      return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `xero: ${what} answered 200 with a body that is not JSON`, false, { cause: err }) };
    }
  }
  if (a.status === 304) return { kind: 'ok', value: { kind: 'not-modified' } };
  if (a.status === 401) return { kind: 'unauthorized', detail: a.text.slice(0, 200) };
  if (a.status === 403) {
    const error = new PlatformError(
      'PLATFORM_AUTH_FAILED',
      `xero: ${what} answered 403: the connection has no access to Xero organisation ${xeroTenantId} ` +
        '(disconnected, or without the accounting.contacts.read and accounting.transactions.read scopes); reconnect the app and put the new refresh token in the tenants file',
      false,
    );
    return { kind: 'fail', error };
  }
  if (a.status === 429) return { kind: 'throttled', scope: PROBLEMS[headerValue(a.headers, 'x-rate-limit-problem')?.trim().toLowerCase() ?? ''] ?? 'minute' };
  if (a.status >= 500) return { kind: 'retry', error: new PlatformError('PLATFORM_UNAVAILABLE', `xero: ${what} answered ${a.status}`, true) };
  return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `xero: ${what} answered ${a.status}: ${a.text.slice(0, 200)}`, false) };
}

export interface XeroHttpOptions {
  apiUrl: string;
  xeroTenantId: string;
  access: OAuthAccess;
  dispatcher: Dispatcher;
  settings?: Partial<XeroHttpSettings>;
  logger?: Logger;
}

/** GETs to Xero's Accounting API for one organisation, through the shared driver. */
export class XeroHttp {
  private readonly driver: PlatformDriver;

  constructor(private readonly options: XeroHttpOptions) {
    this.driver = new PlatformDriver({
      platform: xeroPlatform(options.xeroTenantId),
      access: options.access,
      dispatcher: options.dispatcher,
      settings: { ...DEFAULT_HTTP_SETTINGS, ...options.settings },
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  get(path: string, query: URLSearchParams, headers: Record<string, string>, signal?: AbortSignal): Promise<XeroGetResult> {
    // Spaces as %20 (`order=UpdatedDateUTC%20ASC`), not form-encoding's `+`; a literal `+` is already %2B.
    const url = `${this.options.apiUrl}${path}?${query.toString().replace(/\+/g, '%20')}`;
    const what = `GET ${path}`;
    return this.driver.get({ url, what, headers, classify: (a) => classify(what, this.options.xeroTenantId, a) }, signal);
  }
}
