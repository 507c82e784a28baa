/**
 * The QuickBooks Online Accounting API as a platform descriptor for the shared driver (oauth/driver.ts):
 * `Accept: application/json`, the pinned `minorversion`, and Fault bodies classified:
 * - AuthenticationFault (401): refreshed once by the driver; again is PLATFORM_AUTH_FAILED.
 * - AuthorizationFault (403): the app lost its scope on the company: PLATFORM_AUTH_FAILED.
 * - ValidationFault (400): `QuickBooksFaultError` (not retried): the adapter narrows a page down to the record.
 * - SystemFault (500, 503), network errors, timeouts: retried with backoff (bounded), then PLATFORM_UNAVAILABLE.
 * - 429: every process waits `Retry-After` (60 s without one).
 * Every failure is logged with Intuit's `intuit_tid` (what Intuit support asks for), never with a token.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { PlatformError } from '../types.js';
import { headerValue } from '../wire.js';
import type { OAuthAccess } from '../oauth/access.js';
import { PlatformDriver, type DriverSettings, type PlatformAnswer, type PlatformDescriptor, type Verdict } from '../oauth/driver.js';
import { parseFault, type QboFault } from './schemas.js';

/** The minor version every request pins (Intuit's JSON changes shape between minor versions). */
export const QBO_MINOR_VERSION = '75';

export type QuickBooksHttpSettings = DriverSettings;

export const DEFAULT_QBO_HTTP_SETTINGS: QuickBooksHttpSettings = { requestTimeoutMs: 30_000, retries: 2, retryBaseMs: 250 };

/** How long every process waits after a 429 without Retry-After. */
export const QUICKBOOKS_THROTTLE_DEFAULT_MS = 60_000;

export interface QuickBooksHttpOptions {
  /** `https://quickbooks.api.intuit.com` (production) or `https://sandbox-quickbooks.api.intuit.com`. */
  apiUrl: string;
  realmId: string;
  /** Tokens and leases (the shared platform-OAuth room and limiter). */
  access: OAuthAccess;
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

const tidOf = (a: PlatformAnswer): string => headerValue(a.headers, 'intuit_tid') ?? 'none';

/** QuickBooks Online, for one company (realm). */
export function quickBooksPlatform(realmId: string): PlatformDescriptor {
  return {
    name: 'quickbooks',
    headers: { accept: 'application/json' },
    unauthorized: (what, detail) =>
      new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `quickbooks: ${what} answered 401 AuthenticationFault even with a refreshed token (${detail}); reconnect the app to company ${realmId} and put the new refresh token in the tenants file`,
        false,
      ),
    trace: (a) => ({ fields: { intuit_tid: headerValue(a.headers, 'intuit_tid') }, text: `intuit_tid ${tidOf(a)}` }),
  };
}

function classify(what: string, realmId: string, a: PlatformAnswer): Verdict<unknown> {
  const tid = tidOf(a);
  const body = parseJson(a.text);
  // QuickBooks may answer 200 with a Fault body: a Fault is a Fault whatever the status.
  const fault = parseFault(body);
  if (a.status === 200 && fault === undefined) {
    if (body === undefined) return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: ${what} answered 200 with a body that is not JSON (intuit_tid ${tid})`, false) };
    return { kind: 'ok', value: body };
  }
  if (a.status === 429) return { kind: 'throttled', scope: 'minute' };
  const type = fault?.type ?? (a.status === 401 ? 'AuthenticationFault' : a.status === 403 ? 'AuthorizationFault' : a.status >= 500 ? 'SystemFault' : 'unknown');
  const detail = fault?.message ?? a.text.slice(0, 200);
  if (type === 'AuthenticationFault') return { kind: 'unauthorized', detail };
  if (type === 'AuthorizationFault') {
    const error = new PlatformError(
      'PLATFORM_AUTH_FAILED',
      `quickbooks: ${what} answered ${a.status} AuthorizationFault (${detail}; intuit_tid ${tid}): the app has no com.intuit.quickbooks.accounting access to company ${realmId}; reconnect it`,
      false,
    );
    return { kind: 'fail', error };
  }
  const faultTid = tid === 'none' ? undefined : tid;
  if (fault?.type === 'SystemFault') return { kind: 'retry', error: new QuickBooksFaultError(fault, a.status, faultTid, what) };
  if (type === 'SystemFault' || a.status >= 500) return { kind: 'retry', error: new PlatformError('PLATFORM_UNAVAILABLE', `quickbooks: ${what} answered ${a.status} SystemFault: ${detail} (intuit_tid ${tid})`, true) };
  if (fault !== undefined) return { kind: 'fail', error: new QuickBooksFaultError(fault, a.status, faultTid, what) };
  return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: ${what} answered ${a.status}: ${detail} (intuit_tid ${tid})`, false) };
}

/** GETs to the QuickBooks Online Accounting API for one company, through the shared driver. */
export class QuickBooksHttp {
  private readonly driver: PlatformDriver;
  private readonly base: string;

  constructor(private readonly options: QuickBooksHttpOptions) {
    this.base = `${options.apiUrl.replace(/\/+$/, '')}/v3/company/${encodeURIComponent(options.realmId)}`;
    this.driver = new PlatformDriver({
      platform: quickBooksPlatform(options.realmId),
      access: options.access,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      settings: { ...DEFAULT_QBO_HTTP_SETTINGS, ...options.settings },
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** `GET /v3/company/<realm>/<path>?<params>&minorversion=NN`: the parsed JSON body. `what` names the call in errors. */
  get(path: string, params: Record<string, string>, what: string, signal?: AbortSignal): Promise<unknown> {
    const query = new URLSearchParams({ ...params, minorversion: QBO_MINOR_VERSION }).toString().replace(/\+/g, '%20');
    return this.driver.get({ url: `${this.base}/${path}?${query}`, what, classify: (a) => classify(what, this.options.realmId, a) }, signal);
  }
}
