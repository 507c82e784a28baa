/**
 * One HTTP exchange with the service over undici: timeouts, an AbortSignal on every call, the body always
 * read or destroyed, and network failures classified by whether the request may have reached the service.
 */
import { Agent, type Dispatcher } from 'undici';
import { AbortedError, AmbiguousError, CollectionsError, TransientError } from './errors.js';

export interface Timeouts {
  /** TCP (and TLS) connect. */
  connectMs: number;
  /** From the request written to the response headers. */
  headersMs: number;
  /** Between two chunks of the response body. */
  bodyMs: number;
  /** Total time of one client call, retries and their waits included. */
  requestMs: number;
}

/** Well under BullMQ's 30 s lock; undici's own defaults are 300 s. Same values as the env defaults. */
export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 5_000, headersMs: 15_000, bodyMs: 15_000, requestMs: 20_000 };

/** A keep-alive Agent (one pool per origin) for the client; share one by passing it as `dispatcher`. */
export function createAgent(t: Pick<Timeouts, 'connectMs' | 'headersMs' | 'bodyMs'> = DEFAULT_TIMEOUTS): Agent {
  return new Agent({
    connect: { timeout: t.connectMs },
    headersTimeout: t.headersMs,
    bodyTimeout: t.bodyMs,
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 30_000,
  });
}

export type HttpMethod = 'GET' | 'POST' | 'PUT';
export type HttpHeaders = Dispatcher.ResponseData['headers'];

export interface HttpRequest {
  /** `http(s)://host[:port]`. */
  origin: string;
  /** Path and query (`/api-service/v1/contact?page=1`). */
  path: string;
  method: HttpMethod;
  headers: Record<string, string>;
  body?: string;
}

export interface HttpResponse {
  status: number;
  headers: HttpHeaders;
  text: string;
}

export interface SendContext {
  route: string;
  /** Whether repeating the request is harmless; decides `retryable` of an AmbiguousError. */
  idempotent: boolean;
  /** The caller's signal: its abort becomes an AbortedError. */
  signal?: AbortSignal | undefined;
  /** This attempt's time budget (the call's remaining `requestMs`). */
  timeoutMs: number;
  headersMs: number;
  bodyMs: number;
}

/**
 * The abort of one request, as undici takes it (an object with `on`/`once`/`addListener`/`removeListener`, `aborted` and
 * `reason`, like an EventEmitter): an AbortController per request was ~3% of a sync's CPU (its AbortSignal, an
 * EventTarget, and undici's addEventListener on it), and nothing but undici listens to this one.
 */
export class RequestAbort {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] = [];

  on(_event: 'abort', listener: () => void): this {
    if (!this.aborted) this.#listeners.push(listener);
    return this;
  }

  /** Every listener is called at most once: the abort happens once. */
  once(event: 'abort', listener: () => void): this {
    return this.on(event, listener);
  }

  removeListener(_event: 'abort', listener: () => void): this {
    const i = this.#listeners.indexOf(listener);
    if (i >= 0) this.#listeners.splice(i, 1);
    return this;
  }

  off(event: 'abort', listener: () => void): this {
    return this.removeListener(event, listener);
  }

  /** The name Node's bundled undici (6.x, its global `fetch`'s) calls instead of `once`. */
  addListener(event: 'abort', listener: () => void): this {
    return this.on(event, listener);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const l of listeners) l();
  }
}

/**
 * Sends one request and reads the whole body. Throws only CollectionsErrors. One RequestAbort and one timer per
 * call, both let go when it ends (AbortSignal.timeout would keep a timer for the whole budget, and AbortSignal.any
 * costs weak references on every call; this is the hot path).
 */
export async function send(dispatcher: Dispatcher, req: HttpRequest, ctx: SendContext): Promise<HttpResponse> {
  const abort = new RequestAbort();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort(new DOMException('the request time budget ran out', 'TimeoutError'));
  }, Math.max(1, ctx.timeoutMs));
  const outer = ctx.signal;
  const followed = outer ? follow(outer, abort) : undefined;
  try {
    const res = await dispatcher.request({
      origin: req.origin,
      path: req.path,
      method: req.method,
      headers: req.headers,
      body: req.body ?? null,
      // undici takes an EventEmitter-like object as well as an AbortSignal (RequestAbort above).
      signal: abort,
      headersTimeout: ctx.headersMs,
      bodyTimeout: ctx.bodyMs,
    });
    try {
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    } catch (err) {
      res.body.destroy();
      throw err;
    }
  } catch (err) {
    throw classifyNetworkError(err, { ...ctx, timedOut });
  } finally {
    clearTimeout(timer);
    followed?.delete(abort);
  }
}

/**
 * The requests under way per caller signal (a run's signal is shared by all of its requests): one abort listener
 * per signal that aborts each of them with its reason, instead of an addEventListener and a removeEventListener per
 * request (EventTarget's dearest calls on the hot path).
 */
const underWay = new WeakMap<AbortSignal, Set<RequestAbort>>();

/** Aborts `abort` with `outer`'s reason when `outer` aborts (at once if it has); returns the set to leave. */
function follow(outer: AbortSignal, abort: RequestAbort): Set<RequestAbort> | undefined {
  if (outer.aborted) {
    abort.abort(outer.reason);
    return undefined;
  }
  let requests = underWay.get(outer);
  if (requests === undefined) {
    const those = new Set<RequestAbort>();
    requests = those;
    underWay.set(outer, those);
    outer.addEventListener(
      'abort',
      () => {
        underWay.delete(outer);
        for (const a of those) a.abort(outer.reason);
      },
      { once: true },
    );
  }
  requests.add(abort);
  return requests;
}

/** Failures before a byte of the request could have reached the service. */
const NOT_SENT = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/**
 * An error without a code (not a socket's or undici's): its name and message, so the log says what it was. Such an
 * error of undici's own setup once read "unknown" in every token call's failure, and hid the cause for a day.
 */
function uncoded(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown';
  return `${err.name}: ${err.message}`.slice(0, 200);
}

function errCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return errCode((err as { cause?: unknown }).cause);
}

/**
 * Connect-phase failures are transient (nothing was sent). Everything after the request may have been
 * written (socket closed or reset, headers/body timeout, our own time budget) is ambiguous: the service may
 * have committed the write. A reset before processing cannot be told from a drop after commit.
 */
export function classifyNetworkError(
  err: unknown,
  ctx: { route: string; idempotent: boolean; signal?: AbortSignal | undefined; timedOut: boolean; timeoutMs: number },
): CollectionsError {
  if (err instanceof CollectionsError) return err;
  if (ctx.signal?.aborted) return new AbortedError({ route: ctx.route, cause: err });
  const code = errCode(err);
  if (code !== undefined && NOT_SENT.has(code)) {
    return new TransientError({ route: ctx.route, message: `could not reach the service (${code})`, cause: err });
  }
  const what = ctx.timedOut ? `no answer within ${ctx.timeoutMs} ms` : `connection failed after sending (${code ?? uncoded(err)})`;
  return new AmbiguousError({ route: ctx.route, message: what, idempotent: ctx.idempotent, cause: err });
}
