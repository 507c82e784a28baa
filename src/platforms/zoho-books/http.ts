/**
 * Zoho Books API v3 as a platform descriptor for the shared driver (oauth/driver.ts): `Authorization:
 * Zoho-oauthtoken <token>`, `organization_id` on every call, and `{code, message}` error bodies read so:
 * - 200 with code 0 (or none): the body. A 200 with another code is a failure Zoho did not mark with its status.
 * - 401 (code 57, not authorized): the token is refreshed once by the driver; again is PLATFORM_AUTH_FAILED. A refresh
 *   token gone meanwhile is `invalid_code` at the token endpoint: the chain is marked needs_reconnect.
 * - 404 with code 1002 (and any 404 with a Zoho code): `gone` (an invoice deleted, for the reconcile pass).
 * - 429: code 1070 or a message about concurrent calls is the in-flight limit; a message naming the day (or a spent
 *   `X-Rate-Limit-Remaining`) the plan's daily limit, which pauses the tenant's runs; anything else (code 45, 44) the
 *   per-minute one. Zoho sends no Retry-After: every process waits the limit's default (decision 0191).
 * - 5xx: retried (bounded), then PLATFORM_UNAVAILABLE. Anything else: PLATFORM_BAD_RESPONSE with Zoho's code and message.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { PlatformError } from '../types.js';
import { headerValue } from '../wire.js';
import type { OAuthAccess } from '../oauth/access.js';
import { PlatformDriver, type DriverSettings, type PlatformAnswer, type PlatformDescriptor, type Verdict } from '../oauth/driver.js';
import type { LimitScope } from '../oauth/rate-limiter.js';
import { zohoErrorSchema, type ZohoError } from './schemas.js';

export type ZohoHttpSettings = DriverSettings;

export const DEFAULT_ZOHO_HTTP_SETTINGS: ZohoHttpSettings = { requestTimeoutMs: 30_000, retries: 2, retryBaseMs: 250 };

/** How long every process waits after a 429 (Zoho sends no Retry-After), by the limit it hit. */
export function zohoThrottleDefaultMs(scope: LimitScope, dayBlockMs: number): number {
  return scope === 'day' ? dayBlockMs : scope === 'concurrent' ? 1_000 : 60_000;
}

/** What a GET gave: the parsed JSON body, or `gone` (404 with Zoho's code: the record does not exist). */
export type ZohoGetResult = { kind: 'json'; body: unknown } | { kind: 'gone'; code: number };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function errorOf(body: unknown): ZohoError | undefined {
  const parsed = zohoErrorSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

/** The limit a 429 names (decision 0191: Zoho's docs give the codes inconsistently, so the message decides first). */
export function limitOf(error: ZohoError | undefined): LimitScope {
  const message = error?.message?.toLowerCase() ?? '';
  if (error?.code === 1070 || message.includes('concurren')) return 'concurrent';
  if (/\b(day|daily|per day)\b/.test(message)) return 'day';
  return 'minute';
}

/** Zoho Books, for one organization. */
export function zohoBooksPlatform(organizationId: string): PlatformDescriptor {
  return {
    name: 'zoho-books',
    headers: { accept: 'application/json' },
    authorization: (token) => `Zoho-oauthtoken ${token}`,
    unauthorized: (what, detail) =>
      new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `zoho-books: ${what} answered 401 even with a freshly refreshed token (${detail}); the connection no longer reaches organization ${organizationId}: send a reconnect link (collections-sync connect link --tenant <id> --reconnect)`,
        false,
      ),
  };
}

export function classify(what: string, a: PlatformAnswer): Verdict<ZohoGetResult> {
  const body = parseJson(a.text);
  const error = errorOf(body);
  const said = error !== undefined ? `code ${error.code}: ${error.message ?? ''}` : a.text.slice(0, 200);
  if (a.status === 200) {
    if (body === undefined) return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `zoho-books: ${what} answered 200 with a body that is not JSON`, false) };
    if (error !== undefined && error.code !== 0) return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `zoho-books: ${what} answered 200 with ${said}`, false) };
    return { kind: 'ok', value: { kind: 'json', body } };
  }
  if (a.status === 401) return { kind: 'unauthorized', detail: said };
  if (a.status === 404 && error !== undefined) return { kind: 'ok', value: { kind: 'gone', code: error.code } };
  if (a.status === 429) return { kind: 'throttled', scope: limitOf(error) };
  if (a.status >= 500) return { kind: 'retry', error: new PlatformError('PLATFORM_UNAVAILABLE', `zoho-books: ${what} answered ${a.status} (${said})`, true) };
  if (a.status === 400 && error?.code === 2) {
    return { kind: 'fail', error: new PlatformError('PLATFORM_AUTH_FAILED', `zoho-books: ${what} answered 400 ${said}: the connection does not reach this organization; check organizationId or send a reconnect link`, false) };
  }
  return { kind: 'fail', error: new PlatformError('PLATFORM_BAD_RESPONSE', `zoho-books: ${what} answered ${a.status} (${said})`, false) };
}

export interface ZohoHttpOptions {
  /** The connection's API domain (`https://www.zohoapis.eu`), without `/books/v3`. */
  apiDomain: string;
  organizationId: string;
  access: OAuthAccess;
  dispatcher?: Dispatcher;
  settings?: Partial<ZohoHttpSettings>;
  logger?: Logger;
}

/** GETs to Zoho Books API v3 for one organization, through the shared driver. */
export class ZohoHttp {
  private readonly driver: PlatformDriver;
  private readonly base: string;

  constructor(private readonly options: ZohoHttpOptions) {
    this.base = `${options.apiDomain.replace(/\/+$/, '')}/books/v3`;
    this.driver = new PlatformDriver({
      platform: zohoBooksPlatform(options.organizationId),
      access: options.access,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      settings: { ...DEFAULT_ZOHO_HTTP_SETTINGS, ...options.settings },
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** `GET /books/v3/<path>?organization_id=...&<params>`. A plan's daily limit reported spent pauses every process. */
  async get(path: string, params: Record<string, string>, signal?: AbortSignal): Promise<ZohoGetResult> {
    const query = new URLSearchParams({ organization_id: this.options.organizationId, ...params }).toString();
    const what = `GET /${path.split('/')[0]}${path.includes('/') ? '/{id}' : ''}`;
    let headers: PlatformAnswer['headers'] = {};
    const result = await this.driver.get(
      {
        url: `${this.base}/${path}?${query}`,
        what,
        classify: (a) => {
          headers = a.headers;
          return classify(what, a);
        },
      },
      signal,
    );
    // Where Zoho sends its plan's counters: the last call of the day pauses the tenant's runs until they reset.
    if (headerValue(headers, 'x-rate-limit-remaining')?.trim() === '0') {
      const reset = headerValue(headers, 'x-rate-limit-reset');
      const error = await this.options.access.throttled(reset !== undefined && /^\d{1,5}$/.test(reset.trim()) ? reset.trim() : undefined, 'day');
      this.options.logger?.warn({ reason: error.message }, 'zoho-books: the daily API limit of the plan is spent');
    }
    return result;
  }
}
