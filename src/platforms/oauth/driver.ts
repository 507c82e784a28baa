/**
 * The one request path of every OAuth platform: token -> lease -> GET -> classify -> back-off -> rate limit. A
 * platform is a descriptor (its name, the headers every call carries, how it names a failed call, how it reads an
 * answer) and its mapping; this file is the loop they all share.
 * - A token first: a refresh (or a wait for another process's) must not hold an in-flight lease.
 * - 401 (`unauthorized`): the token is refreshed (compare-and-refresh) and the call repeated once; a second is
 *   PLATFORM_AUTH_FAILED with what to do.
 * - 429 (`throttled`): a shared block for every process and a PlatformRateLimitedError for the sync to wait or
 *   reschedule.
 * - `retry` (5xx, a platform's system fault, network errors, timeouts): retried with backoff (bounded), then the
 *   last error (PLATFORM_UNAVAILABLE, retryable).
 * - `fail`: thrown as it is.
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { PlatformError, PlatformRateLimitedError } from '../types.js';
import { retry } from '../../retry.js';
import { errorName, headerValue, isTransient, platformPolicy, type RetrySettings } from '../wire.js';
import type { OAuthAccess } from './access.js';
import type { LimitScope } from './rate-limiter.js';

/** One answer as the platform sent it. */
export interface PlatformAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** What an answer means, as the platform's descriptor reads it. */
export type Verdict<T> =
  | { kind: 'ok'; value: T }
  /** The access token was refused: refresh once and repeat; `detail` says what the platform said. */
  | { kind: 'unauthorized'; detail: string }
  /** A 429: `scope` is the limit it hit. */
  | { kind: 'throttled'; scope: LimitScope }
  /** Transient (5xx, a system fault): retried, bounded. */
  | { kind: 'retry'; error: PlatformError }
  | { kind: 'fail'; error: PlatformError };

/** A platform, as far as its requests go. */
export interface PlatformDescriptor {
  /** `xero`, `quickbooks`: the first word of every log line and error. */
  readonly name: string;
  /** Headers every call carries besides the token (`accept`, Xero's `xero-tenant-id`). */
  readonly headers: Record<string, string>;
  /** The `Authorization` value of a token: RFC 6750's `Bearer <token>` when absent (Zoho's is `Zoho-oauthtoken <token>`). */
  authorization?(token: string): string;
  /** The error after the API refused a freshly refreshed token too: what the operator does about it. */
  unauthorized(what: string, detail: string): PlatformError;
  /** Log fields and error text that identify one answer to the platform's support (Intuit's intuit_tid). */
  trace?(answer: PlatformAnswer): { fields: Record<string, string | undefined>; text: string };
}

export interface DriverSettings extends RetrySettings {
  /** Whole request (headers and body) deadline. */
  requestTimeoutMs: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}

export interface DriverOptions {
  platform: PlatformDescriptor;
  access: OAuthAccess;
  dispatcher?: Dispatcher;
  settings: DriverSettings;
  logger?: Logger;
}

/** One GET: its URL, what it is called in errors, headers of its own, and how its answers read. */
export interface DriverCall<T> {
  url: string;
  /** `GET /Contacts`, `query Invoice`: names the call in log lines and errors. */
  what: string;
  headers?: Record<string, string>;
  classify: (answer: PlatformAnswer) => Verdict<T>;
}

export class PlatformDriver {
  constructor(private readonly o: DriverOptions) {}

  async get<T>(call: DriverCall<T>, signal?: AbortSignal): Promise<T> {
    const { platform, access, settings, logger } = this.o;
    const name = platform.name;
    let refreshed = false;
    let token: string | undefined;
    let rejected: string | undefined;
    // Only what the send and its answer threw is retried here: a token fetch retries itself (access.ts) and a
    // spent limit is the sync's to wait out, so those end the call as they are.
    const transient = new WeakSet<Error>();
    const attempt = async (): Promise<T> => {
      for (;;) {
        signal?.throwIfAborted();
        if (rejected !== undefined) token = await access.onUnauthorized(rejected);
        rejected = undefined;
        token ??= await access.token();
        const lease = await access.lease(signal);
        try {
          const answer = await this.send(call, token, signal);
          await access.observe?.(answer.headers);
          const verdict = call.classify(answer);
          if (verdict.kind === 'ok') return verdict.value;
          const trace = platform.trace?.(answer);
          const tail = trace ? ` (${trace.text})` : '';
          if (verdict.kind === 'unauthorized') {
            if (refreshed) throw platform.unauthorized(call.what, `${verdict.detail}${tail}`);
            refreshed = true;
            rejected = token;
            logger?.info({ call: call.what, ...trace?.fields }, `${name}: 401, refreshing the access token once`);
            continue;
          }
          if (verdict.kind === 'throttled') {
            const limited = await access.throttled(headerValue(answer.headers, 'retry-after'), verdict.scope);
            throw new PlatformRateLimitedError(limited.scope, limited.retryAfterMs, `${name}: ${call.what} answered 429: ${limited.message}${tail}`);
          }
          logger?.warn({ call: call.what, status: answer.status, reason: verdict.error.message, ...trace?.fields }, `${name}: request failed`);
          if (verdict.kind === 'retry') transient.add(verdict.error);
          throw verdict.error;
        } catch (err) {
          if (isTransient(err)) transient.add(err);
          throw err;
        } finally {
          await lease.release().catch(() => undefined);
        }
      }
    };
    return retry(attempt, platformPolicy(settings, (err) => transient.has(err)), {
      signal,
      onRetry: ({ error, attemptNumber }) => logger?.warn({ call: call.what, failures: attemptNumber, reason: error.message }, `${name}: retrying`),
    });
  }

  /** The request itself; a transport failure (reset, timeout) is PLATFORM_UNAVAILABLE, the caller's abort its own. */
  private async send(call: DriverCall<unknown>, token: string, signal?: AbortSignal): Promise<PlatformAnswer> {
    const { platform, settings, dispatcher } = this.o;
    const deadline = AbortSignal.timeout(settings.requestTimeoutMs);
    try {
      const res = await request(call.url, {
        method: 'GET',
        ...(dispatcher ? { dispatcher } : {}),
        headers: { ...call.headers, ...platform.headers, authorization: platform.authorization?.(token) ?? `Bearer ${token}` },
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
        ...(settings.headersTimeoutMs !== undefined ? { headersTimeout: settings.headersTimeoutMs } : {}),
        ...(settings.bodyTimeoutMs !== undefined ? { bodyTimeout: settings.bodyTimeoutMs } : {}),
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${platform.name}: ${call.what} failed (${errorName(err)})`, true, { cause: err });
    }
  }
}
