/**
 * The typed client of the collections service. Every request is checked locally against the contract
 * (a request the service would 422 is refused with a local ValidationError), every answer is parsed with
 * the response schema. Tokens come from a TokenProvider (leases); a 401 is reported to it and retried
 * (at most twice per call). One retry layer (retry.ts) for the transient class, 429 and, for idempotent
 * operations only, ambiguous failures. A call given request slots (slots.ts: a sync run's pool) holds one for each
 * attempt's send only, never while it waits out a back-off, and says how each attempt went when it gives it back.
 */
import { pino, type Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { wasChecked } from './checked.js';
import { fastCheckOf } from '../zod-fast-check.js';
import { AbortedError, AuthError, CollectionsError, parseRetryAfter, TransientError, ValidationError } from './errors.js';
import { createAgent, DEFAULT_TIMEOUTS, send, type HttpMethod, type HttpRequest, type HttpResponse, type Timeouts } from './http.js';
import { authReason, errorFromResponse, looseBody, parseBody } from './responses.js';
import { DEFAULT_BACKOFF, withRetries, type Backoff } from './retry.js';
import { ANSWERED, FAILED, type RequestSlots, type SlotOutcome } from './slots.js';
import {
  bulkCallSchema,
  CONTACT_LIST_PARAMS,
  contactCreateSchema,
  contactListQuerySchema,
  contactPageSchema,
  contactSchema,
  contactUpdateSchema,
  invoiceSchema,
  invoiceUpsertSchema,
  paymentSchema,
  paymentUpdateSchema,
  singleCallSchema,
  toValidationDetail,
  uuid as uuidSchema,
  type BulkCall,
  type Contact,
  type ContactCreate,
  type ContactListQuery,
  type ContactPage,
  type ContactUpdate,
  type Invoice,
  type InvoiceUpsert,
  type Payment,
  type PaymentUpdate,
  type SingleCall,
  type ValidationDetail,
} from './schemas.js';
import { reportedIssues } from '../zod-issues.js';
import type { TokenLease, TokenProvider } from './token-provider.js';

/** What the metrics hook sees once per attempt. `status` is the HTTP status or the error code. */
export interface RequestEvent {
  route: string;
  method: HttpMethod;
  status: number | string;
  durationMs: number;
  attempt: number;
}

export interface CollectionsClientOptions {
  /** Ends with /api-service/v1. */
  baseUrl: string;
  tokens: TokenProvider;
  timeouts?: Partial<Timeouts>;
  /** Retries of one call (not counting the re-sends after a 401). Default 4. */
  retries?: number;
  backoff?: Partial<Backoff>;
  /** Share a pool between clients; the client then leaves it open on close(). */
  dispatcher?: Dispatcher;
  logger?: Logger;
  onRequest?: (e: RequestEvent) => void;
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * Where the call's attempts take turns (a sync run's request pool): a slot is taken before each send and given
   * back when its answer is read, so a call waiting out a back-off holds none. Without it, nothing is waited for.
   */
  slots?: RequestSlots;
}

/** The answer of a call endpoint, whose body the description does not show. */
export interface CallResult {
  status: number;
  body: unknown;
}

interface Operation<T> {
  route: string;
  method: HttpMethod;
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  idempotent: boolean;
  ok: (res: HttpResponse) => T;
}

/** Re-sends after a 401 (each after `tokens.rejected`), per call. */
const MAX_AUTH_RETRIES = 2;
/**
 * Re-sends after a 401 `expired`, per call, within the request's deadline: the service refused the token before
 * doing anything, so sending again with a newer token is always safe. A process whose event loop stalls (a
 * starved machine) can see a token it took in good time expire on the way more than twice in a row.
 */
const MAX_EXPIRED_RETRIES = 8;
const pathUuid = z.object({ uuid: uuidSchema });

export class CollectionsClient {
  /** The base URL's origin and path, parsed once (not per request). */
  readonly #origin: string;
  readonly #basePath: string;
  readonly #tokens: TokenProvider;
  readonly #timeouts: Timeouts;
  readonly #retries: number;
  readonly #backoff: Backoff;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #log: Logger;
  readonly #onRequest: ((e: RequestEvent) => void) | undefined;

  constructor(o: CollectionsClientOptions) {
    const base = o.baseUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/.+\/api-service\/v1$/.test(base)) throw new TypeError('baseUrl must be an http(s) URL ending with /api-service/v1');
    const parsed = new URL(base);
    this.#origin = parsed.origin;
    this.#basePath = parsed.pathname;
    this.#tokens = o.tokens;
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
    this.#retries = o.retries ?? 4;
    this.#backoff = { ...DEFAULT_BACKOFF, ...o.backoff };
    this.#ownsDispatcher = o.dispatcher === undefined;
    this.#dispatcher = o.dispatcher ?? createAgent(this.#timeouts);
    this.#log = (o.logger ?? pino({ level: 'silent' })).child({ component: 'collections-client' });
    this.#onRequest = o.onRequest;
  }

  async createContact(body: ContactCreate, opts: CallOptions = {}): Promise<Contact> {
    const route = 'POST /contact';
    const valid = check(route, contactCreateSchema, body, 'body');
    return this.#execute({ route, method: 'POST', path: '/contact', body: valid, idempotent: false, ok: (r) => parseBody(route, r, contactSchema) }, opts);
  }

  async updateContact(body: ContactUpdate, opts: CallOptions = {}): Promise<Contact> {
    const route = 'PUT /contact';
    const valid = check(route, contactUpdateSchema, body, 'body');
    return this.#execute({ route, method: 'PUT', path: '/contact', body: valid, idempotent: true, ok: (r) => parseBody(route, r, contactSchema) }, opts);
  }

  async listContacts(query: ContactListQuery = {}, opts: CallOptions = {}): Promise<ContactPage> {
    const route = 'GET /contact';
    const kebab = (k: PropertyKey) => (typeof k === 'string' && k in CONTACT_LIST_PARAMS ? CONTACT_LIST_PARAMS[k as keyof typeof CONTACT_LIST_PARAMS] : String(k));
    const valid = check(route, contactListQuerySchema, query, 'query', kebab);
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(valid)) if (v !== undefined) params.set(kebab(k), String(v));
    return this.#execute({ route, method: 'GET', path: '/contact', query: params, idempotent: true, ok: (r) => parseBody(route, r, contactPageSchema) }, opts);
  }

  /** Every contact matching `query`, page by page (size 100) from `query.page` (default 1). */
  async *listAllContacts(query: Omit<ContactListQuery, 'size'> = {}, opts: CallOptions = {}): AsyncGenerator<Contact> {
    let page = Number(query.page ?? 1);
    for (;;) {
      const p = await this.listContacts({ ...query, page, size: 100 }, opts);
      yield* p.items;
      if (p.items.length === 0 || page >= p.pages) return;
      page += 1;
    }
  }

  async upsertInvoice(body: InvoiceUpsert, opts: CallOptions = {}): Promise<Invoice> {
    const route = 'POST /invoice/create-update';
    const valid = check(route, invoiceUpsertSchema, body, 'body');
    return this.#execute({ route, method: 'POST', path: '/invoice/create-update', body: valid, idempotent: true, ok: (r) => parseBody(route, r, invoiceSchema) }, opts);
  }

  async updatePayment(uuid: string, body: PaymentUpdate, opts: CallOptions = {}): Promise<Payment> {
    const route = 'PUT /invoice/payment/{uuid}';
    const detail: ValidationDetail[] = [];
    const p = pathUuid.safeParse({ uuid });
    if (!p.success) detail.push(...toValidationDetail(reportedIssues(pathUuid, { uuid }), 'path'));
    const b = paymentUpdateSchema.safeParse(body);
    if (!b.success) detail.push(...toValidationDetail(reportedIssues(paymentUpdateSchema, body), 'body'));
    if (!p.success || !b.success) throw new ValidationError({ route, detail, local: true });
    const path = `/invoice/payment/${encodeURIComponent(p.data.uuid)}`;
    return this.#execute({ route, method: 'PUT', path, body: b.data, idempotent: true, ok: (r) => parseBody(route, r, paymentSchema) }, opts);
  }

  /** Not idempotent: an ambiguous failure is thrown at once (AmbiguousError), never retried. */
  async bulkCall(body: BulkCall, opts: CallOptions = {}): Promise<CallResult> {
    const route = 'POST /ai/phone-calls/action/call-bulk';
    const valid = check(route, bulkCallSchema, body, 'body');
    return this.#execute({ route, method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: valid, idempotent: false, ok: (r) => ({ status: r.status, body: looseBody(r) }) }, opts);
  }

  /** Not idempotent: an ambiguous failure is thrown at once (AmbiguousError), never retried. */
  async call(body: SingleCall, opts: CallOptions = {}): Promise<CallResult> {
    const route = 'POST /ai/phone-calls/action/call';
    const valid = check(route, singleCallSchema, body, 'body');
    return this.#execute({ route, method: 'POST', path: '/ai/phone-calls/action/call', body: valid, idempotent: false, ok: (r) => ({ status: r.status, body: looseBody(r) }) }, opts);
  }

  /** Closes the pool if the client created it (a shared dispatcher is left to its owner). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async #execute<T>(op: Operation<T>, call: CallOptions): Promise<T> {
    const { signal, slots } = call;
    if (signal?.aborted) throw new AbortedError({ route: op.route, cause: signal.reason });
    // The first slot is taken before the call's clock starts: waiting behind the holder's other calls is not this
    // call's time budget (as when the holder wrapped the whole call). Later attempts take theirs within it.
    let held = slots === undefined ? undefined : await slots.take(signal, false);
    const deadlineMs = Date.now() + this.#timeouts.requestMs;
    let authRetries = 0;
    return withRetries(
      async (attempt) => {
        for (;;) {
          let sent: { res: HttpResponse; lease: TokenLease };
          if (slots === undefined) sent = await this.#attempt(op, attempt, deadlineMs, signal);
          else {
            const ticket = held ?? (await slots.take(signal, true));
            held = undefined;
            sent = await this.#attemptInSlot(op, attempt, deadlineMs, signal, slots, ticket);
          }
          const { res, lease } = sent;
          if (res.status >= 200 && res.status < 300) return op.ok(res);
          if (res.status !== 401) throw errorFromResponse(op.route, res, op.idempotent);
          const reason = authReason(res.text);
          const limit = reason === 'expired' ? MAX_EXPIRED_RETRIES : MAX_AUTH_RETRIES;
          if (authRetries >= limit || Date.now() >= deadlineMs) throw new AuthError({ route: op.route, reason, body: res.text });
          authRetries += 1;
          this.#log.debug({ route: op.route, reason, authRetries }, 'token rejected; reporting it and retrying');
          await this.#reject(op.route, lease, reason, signal);
        }
      },
      {
        route: op.route,
        idempotent: op.idempotent,
        retries: this.#retries,
        backoff: this.#backoff,
        deadlineMs,
        signal,
        onRetry: ({ error, attemptNumber, waitMs }) =>
          this.#log.debug({ route: op.route, code: error instanceof CollectionsError ? error.code : error.name, attempt: attemptNumber, waitMs }, 'retrying collections request'),
      },
    );
  }

  /** An attempt in the slot of `ticket`, given back once the answer is read (or the attempt failed). */
  async #attemptInSlot<T>(
    op: Operation<T>,
    attempt: number,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    slots: RequestSlots,
    ticket: number,
  ): Promise<{ res: HttpResponse; lease: TokenLease }> {
    let outcome = FAILED;
    try {
      const sent = await this.#attempt(op, attempt, deadlineMs, signal, slots.sending ? () => slots.sending?.(ticket) : undefined);
      outcome = slotOutcome(sent.res);
      return sent;
    } finally {
      slots.give(ticket, outcome);
    }
  }

  /** One send with one lease: acquire, send, read the body, release; logs and reports the attempt. */
  async #attempt<T>(
    op: Operation<T>,
    attempt: number,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    onSending?: () => void,
  ): Promise<{ res: HttpResponse; lease: TokenLease }> {
    const lease = await this.#acquire(op.route, deadlineMs, signal);
    onSending?.();
    const started = performance.now();
    let status: number | string = 'error';
    try {
      const path = this.#basePath + op.path + (op.query && op.query.size > 0 ? `?${op.query.toString()}` : '');
      const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${lease.token}` };
      const req: HttpRequest = { origin: this.#origin, path, method: op.method, headers };
      if (op.body !== undefined) {
        headers['content-type'] = 'application/json';
        req.body = JSON.stringify(op.body);
      }
      const res = await send(this.#dispatcher, req, {
        route: op.route,
        idempotent: op.idempotent,
        signal,
        timeoutMs: deadlineMs - Date.now(),
        headersMs: this.#timeouts.headersMs,
        bodyMs: this.#timeouts.bodyMs,
      });
      status = res.status;
      return { res, lease };
    } catch (err) {
      status = err instanceof CollectionsError ? err.code : 'error';
      throw err;
    } finally {
      await this.#release(lease);
      const durationMs = Math.round(performance.now() - started);
      if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: op.route, method: op.method, status, durationMs, attempt }, 'collections request');
      this.#report({ route: op.route, method: op.method, status, durationMs, attempt });
    }
  }

  async #acquire(route: string, deadlineMs: number, signal: AbortSignal | undefined): Promise<TokenLease> {
    if (signal?.aborted) throw new AbortedError({ route, cause: signal.reason });
    // A lease at hand (pooled, or a fixed token): no wait to set up.
    const ready = this.#tokens.tryAcquire?.();
    if (ready) return ready;
    const remaining = deadlineMs - Date.now();
    if (remaining <= 0) throw new TransientError({ route, message: 'request time budget spent before sending' });
    const timeout = AbortSignal.timeout(remaining);
    try {
      return await this.#tokens.acquire(signal ? AbortSignal.any([signal, timeout]) : timeout);
    } catch (err) {
      if (signal?.aborted) throw new AbortedError({ route, cause: err });
      // The provider's wait was cut by this call's own budget (its AbortedError says "aborted by the caller", and
      // is not retryable): the token endpoint is slow or down, which is transient, as any other service fault.
      if (timeout.aborted && (err instanceof AbortedError || !(err instanceof CollectionsError))) {
        throw new TransientError({ route, message: 'no token lease within the time budget', cause: err });
      }
      if (err instanceof CollectionsError) throw err;
      throw new TransientError({ route, message: 'could not take a token lease', cause: err });
    }
  }

  async #reject(route: string, lease: TokenLease, reason: AuthError['reason'], signal: AbortSignal | undefined): Promise<void> {
    try {
      await this.#tokens.rejected(lease, reason, signal);
    } catch (err) {
      if (signal?.aborted) throw new AbortedError({ route, cause: err });
      if (err instanceof CollectionsError) throw err;
      throw new TransientError({ route, message: 'the token provider failed to handle a 401', cause: err });
    }
  }

  async #release(lease: TokenLease): Promise<void> {
    try {
      await lease.release();
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not release a token lease');
    }
  }

  #report(e: RequestEvent): void {
    try {
      this.#onRequest?.(e);
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, 'onRequest hook threw');
    }
  }
}

/** What an answer says of the service's load: 429 and 503 ask for less; other 5xx say nothing of it. */
function slotOutcome(res: HttpResponse): SlotOutcome {
  const { status } = res;
  if (status < 500 && status !== 429) return ANSWERED;
  if (status === 429 || status === 503) return { kind: 'overloaded', status, retryAfterMs: parseRetryAfter(res.headers['retry-after']) };
  return FAILED;
}

/**
 * `value` through a request schema, or a local ValidationError shaped like the service's 422. A body the mapper
 * already checked against this schema (frozen since; checked.ts) is not checked again, and one the schema's quick
 * check passes (src/zod-fast-check.ts: zod would give back an equal value) is used as it is.
 */
function check<S extends z.ZodType>(route: string, schema: S, value: unknown, where: 'body' | 'query', rename?: (k: PropertyKey) => string | number): z.output<S> {
  if (wasChecked(schema, value) || fastCheckOf(schema)?.(value) === true) return value as z.output<S>;
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError({ route, detail: toValidationDetail(reportedIssues(schema, value), where, rename), local: true });
  return r.data;
}
