/**
 * The webhook receiver: its own HTTP server (WEBHOOK_PORT; off when unset), apart from the ops port, which stays
 * on loopback. `POST /webhooks/calls/{tenantId}`: call outcomes from the collections service.
 *
 *   not authenticated: tenant unknown or without               401, the same answer whatever the tenant, type or
 *   `calls.webhookSecret`, neither `Authorization: Bearer       size (decision 0115); nothing recorded, and the
 *   <secret>` nor a hex HMAC-SHA256 of the raw body (at most    connection is closed
 *   64 KiB, read within SERVER_REQUEST_TIMEOUT_MS) in
 *   WEBHOOK_SIGNATURE_HEADER
 *   Content-Type not JSON                                      415   (checked only once authenticated)
 *   body over 64 KiB / not read within the request timeout     413 / 408
 *   over WEBHOOK_RATE_PER_MIN for the tenant                   429 with Retry-After
 *   body not JSON, or nested deeper than 64 levels             400
 *   otherwise                                                  200 at once: the event is kept and a job settles it
 *
 * `POST /webhooks/<platform path>`: a platform's change notifications (QuickBooks': `/webhooks/quickbooks`), one
 * route per platform module that has one (the composition gives them: platformRoute below). Each verified
 * notification requests deduplicated, debounced incremental runs of the tenants it names. Served only while a tenant
 * gives the route its secret (else answered from its headers as an unknown path); bodies up to the route's cap.
 *
 * Every refusal but the one 401 is an RFC 9457 problem (`application/problem+json`), as the control API's are.
 *
 * Secrets are compared in constant time (digests of equal length); an unknown tenant's request is checked against
 * a stand-in secret, so it costs what a known tenant's does (the body is read, within the same bounds, when the
 * request carries a signature over it). Only what authentication needs is read before it succeeds: a request with
 * neither a Bearer token nor a signature is answered from its headers. Every path but these routes (and those added
 * through `routes`: the connect links of src/connect) answers the same 401. The work is done by a job (`accept`), so the answer takes one or two Redis round trips.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bearerOf, isJsonType, problemAnswer, sameSecret as same } from '../guards.js';
import type { Secret } from '../secret.js';
import { createBoundedServer, DEFAULT_SERVER_LIMITS, listen, MinuteLimiter, type ServerLimits } from '../http-server.js';
import { parseJsonBounded } from '../json-bounded.js';
import type { Logger } from '../logger.js';
import { readBody, type BodyRead } from './body.js';
import { requestIdOf } from '../request-id.js';
import { RefusalLog } from './refusal-log.js';

export const MAX_BODY_BYTES = 64 * 1024;

/** Why a request was refused (a metric outcome is `refused` whatever the reason; the log says which). */
export type Refusal = 'unknown_tenant' | 'bad_secret' | 'too_large' | 'too_slow' | 'not_json' | 'bad_json' | 'rate_limited';

/** How deep a webhook body may nest objects and arrays (a call event nests about four deep). */
export const MAX_BODY_DEPTH = 64;

export interface AcceptResult {
  eventId: string;
  duplicate: boolean;
}

export interface WebhookServerOptions {
  port: number;
  host: string;
  /** Lower-case header name of the hex HMAC-SHA256 of the raw body. */
  signatureHeader: string;
  ratePerMin: number;
  logger: Logger;
  /** Connection bounds (SERVER_*); the body deadline is `requestTimeoutMs`. Default DEFAULT_SERVER_LIMITS. */
  limits?: ServerLimits;
  /** Refusal log lines per minute (default 20); more are counted in one line. */
  refusalLogPerMin?: number;
  /** The tenant's webhook secret; undefined: no such tenant, or it takes no webhooks. */
  secretOf(tenantId: string): Secret | undefined;
  /** Keeps the event and enqueues its job (called only for an authenticated JSON body). */
  accept(tenantId: string, body: unknown, raw: Uint8Array): Promise<AcceptResult>;
  /** Counts what became of a request: refused, or accepted (duplicate or new). */
  onRefused?(tenantId: string | undefined, reason: Refusal): void;
  onAccepted?(tenantId: string, result: AcceptResult): void;
  /** Counts what a platform's notification led to, per tenant (undefined: a connection of no tenant). */
  onPlatformNotice?(path: string, tenantId: string | undefined, outcome: 'sync_requested' | 'ignored'): void;
  /** Platforms' change notifications (`POST /webhooks/<path>`), one route each. */
  platformRoutes?: readonly PlatformRoute[];
  /**
   * More routes of the public server (the connect links: src/connect), added before the catch-all; `unauthorized`
   * is this server's one 401, for every request they cannot authenticate.
   */
  routes?: (app: Hono<Env>, unauthorized: () => Response) => void;
}

/**
 * A platform's change-notification route, as the composition builds it from the platform's module (the receiver
 * knows no platform): its path, its body cap and signature header, and the verification, which says whose runs a
 * body requests.
 */
export interface PlatformRoute {
  /** `POST /webhooks/<path>`. */
  readonly path: string;
  /** The platform's name, for log lines. */
  readonly label: string;
  readonly maxBodyBytes: number;
  readonly signatureHeader: string;
  /**
   * Whether any tenant in force gives the route a secret (read at each request: the tenants file may change). False:
   * the route is not served, and a request is answered from its headers as an unknown path (no body read, no MAC).
   */
  listening(): boolean;
  /** Verifies the body against the listening tenants: whose runs it requests, the connections of no tenant, or why not. */
  verify(body: Buffer, signature: string): Promise<{ kind: 'ok'; tenants: string[]; ignored: string[] } | { kind: 'invalid' } | { kind: 'unreadable'; why: string }>;
  /** Requests one (deduplicated, debounced) incremental run of the tenant. */
  requestSync(tenantId: string): Promise<void>;
}

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

/** Whether `Authorization: Bearer <token>` carries `key` (false without one). */
export function bearerMatches(key: string, authorization: string | undefined): boolean {
  const bearer = bearerOf(authorization);
  return bearer !== undefined && same(bearer, key);
}

/** The signature header's digest (hex, `sha256=` allowed), or undefined when it holds none. */
export function signatureOf(header: string | undefined): Buffer | undefined {
  const sig = header?.trim().replace(/^sha256=/i, '').toLowerCase();
  return sig !== undefined && /^[0-9a-f]{64}$/.test(sig) ? Buffer.from(sig, 'hex') : undefined;
}

/** Whether the request proves the secret: a Bearer token equal to it, or the body's HMAC under it (hex, `sha256=` allowed). */
export function authentic(secret: Secret, raw: Uint8Array, authorization: string | undefined, signature: string | undefined): boolean {
  const key = secret.reveal();
  let ok = bearerMatches(key, authorization);
  const sig = signatureOf(signature);
  if (sig !== undefined) ok = same(sig, createHmac('sha256', key).update(raw).digest()) || ok;
  return ok;
}

export type Env = { Bindings: HttpBindings };
type Status = 400 | 401 | 408 | 413 | 415 | 429;

/** The one answer to every unauthenticated request: the same status, body and headers whatever the reason. */
/** RFC 9457 problem details (decision 0144), like every error of the control API; nothing in it depends on the request. */
const unauthorized = (): Response => problemAnswer({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'unauthorized' }, { connection: 'close' });
/** A refusal after authentication (or of a body no secret verified as readable), as an RFC 9457 problem. */
const problem = (status: number, detail: string, headers: Record<string, string> = {}): Response =>
  problemAnswer({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail }, headers);

export function webhookApp(o: WebhookServerOptions): Hono<Env> {
  const limiter = new MinuteLimiter(o.ratePerMin);
  const limits = o.limits ?? DEFAULT_SERVER_LIMITS;
  const refusals = new RefusalLog(o.logger, o.refusalLogPerMin);
  // Unknown tenants are checked against this, so their requests cost what a known tenant's do.
  const standIn = randomBytes(32).toString('hex');
  const note = (tenant: string | undefined, reason: Refusal, status: Status | 401): void => {
    o.onRefused?.(tenant, reason);
    refusals.refused({ tenant: tenant ?? '(unknown)', reason, status });
  };
  const refuse = (c: Context<Env>, tenant: string | undefined, reason: Refusal, status: Exclude<Status, 401>, detail: string, headers: Record<string, string> = {}): Response => {
    note(tenant, reason, status);
    return problem(status, detail, headers);
  };
  const deny = (tenant: string | undefined, reason: Refusal): Response => {
    note(tenant, reason, 401);
    return unauthorized();
  };
  /** A body read that did not give the bytes, before authentication: the client left (logged at debug) or 401. */
  const unreadBeforeAuth = (r: Exclude<BodyRead, { kind: 'ok' }>, tenant: string | undefined, path: string): Response => {
    if (r.kind === 'aborted') {
      o.logger.debug({ path }, 'webhook: the client closed the request before its body arrived');
      return unauthorized();
    }
    return deny(tenant, r.kind === 'too_large' ? 'too_large' : 'too_slow');
  };
  const app = new Hono<Env>();
  app.use('*', answerHeaders);

  app.post('/webhooks/calls/:tenant', async (c) => {
    const deadlineAt = Date.now() + limits.requestTimeoutMs;
    const tenant = c.req.param('tenant');
    const secret = o.secretOf(tenant);
    const known = secret === undefined ? undefined : tenant;
    const key = secret?.reveal() ?? standIn;
    let raw: Buffer | undefined;
    if (!bearerMatches(key, c.req.header('authorization'))) {
      // The signature is over the body: read it (bounded), then verify, for an unknown tenant against the stand-in.
      const sig = signatureOf(c.req.header(o.signatureHeader));
      if (sig === undefined) return deny(known, secret ? 'bad_secret' : 'unknown_tenant');
      const read = await readBody(c.env.incoming, MAX_BODY_BYTES, deadlineAt);
      if (read.kind !== 'ok') return unreadBeforeAuth(read, known, c.req.path);
      if (!same(sig, createHmac('sha256', key).update(read.raw).digest()) || secret === undefined) return deny(known, secret ? 'bad_secret' : 'unknown_tenant');
      raw = read.raw;
    } else if (secret === undefined) return deny(undefined, 'unknown_tenant');
    // Authenticated: now the content is looked at.
    if (!isJsonType(c.req.header('content-type'))) return refuse(c, tenant, 'not_json', 415, 'the body must be JSON (Content-Type: application/json)', { connection: 'close' });
    if (raw === undefined) {
      const read = await readBody(c.env.incoming, MAX_BODY_BYTES, deadlineAt);
      if (read.kind === 'aborted') {
        o.logger.debug({ tenant, path: c.req.path }, 'webhook: the client closed the request before its body arrived');
        return problem(400, 'the client closed the request before its body arrived');
      }
      if (read.kind === 'too_large') return refuse(c, tenant, 'too_large', 413, `the body is over ${MAX_BODY_BYTES} bytes`, { connection: 'close' });
      if (read.kind === 'timeout') return refuse(c, tenant, 'too_slow', 408, `the body did not arrive within ${limits.requestTimeoutMs} ms`, { connection: 'close' });
      raw = read.raw;
    }
    const wait = limiter.take(tenant);
    if (wait > 0) return refuse(c, tenant, 'rate_limited', 429, 'too many webhook requests for this tenant', { 'retry-after': String(wait) });
    const json = parseJsonBounded(raw.toString('utf8'), MAX_BODY_DEPTH);
    if (!json.ok) return refuse(c, tenant, 'bad_json', 400, json.why === 'too_deep' ? `the body nests deeper than ${MAX_BODY_DEPTH} levels` : 'the body is not valid JSON');
    const result = await o.accept(tenant, json.value, raw);
    o.onAccepted?.(tenant, result);
    return c.json({ ok: true, eventId: result.eventId, duplicate: result.duplicate }, 200);
  });
  for (const route of o.platformRoutes ?? []) platformRoute(app, route, o, { limits, deny, refuse, unreadBeforeAuth });
  o.routes?.(app, unauthorized);
  // Nothing else is served, and an unknown path says no more than a refused request (docs/security.md).
  app.notFound(() => unauthorized());
  app.onError((err, c) => {
    o.logger.error({ err: err.message, path: c.req.path }, 'webhook: request failed (the sender should retry)');
    return problem(503, 'not accepted, try again later');
  });
  return app;
}

/**
 * What every answer of the public server carries: its `Request-Id` (request-id.ts), and on a 401 the scheme to
 * authenticate with (RFC 6750: `WWW-Authenticate: Bearer`, with `error="invalid_token"` when a Bearer token was sent
 * and refused). Both depend on the request alone, so the one 401 still says nothing of why (decision 0231).
 */
const answerHeaders = async (c: Context<Env>, next: () => Promise<void>): Promise<void> => {
  const id = requestIdOf(c.req.raw);
  await next();
  c.header('request-id', id);
  if (c.res.status === 401) c.header('www-authenticate', bearerOf(c.req.header('authorization')) === undefined ? 'Bearer' : 'Bearer error="invalid_token"');
};

interface RouteTools {
  limits: ServerLimits;
  deny(tenant: string | undefined, reason: Refusal): Response;
  refuse(c: Context<Env>, tenant: string | undefined, reason: Refusal, status: Exclude<Status, 401>, detail: string): Response;
  unreadBeforeAuth(r: Exclude<BodyRead, { kind: 'ok' }>, tenant: string | undefined, path: string): Response;
}

/**
 * `POST /webhooks/<path>`: 401 when no tenant's secret verifies the body (nothing changes), and without a signature
 * the body is not read. Each tenant the body names (of those whose secret verified it) gets one requested run; a
 * connection of no tenant is logged and ignored. 200 once the runs are requested.
 */
function platformRoute(app: Hono<Env>, route: PlatformRoute, o: WebhookServerOptions, t: RouteTools): void {
  app.post(`/webhooks/${route.path}`, async (c) => {
    // No tenant could verify a notification: not served (the one 401 of an unknown path, from the headers alone).
    if (!route.listening()) return c.notFound();
    const deadlineAt = Date.now() + t.limits.requestTimeoutMs;
    const signature = c.req.header(route.signatureHeader)?.trim() ?? '';
    if (signature.length === 0) return t.deny(undefined, 'bad_secret');
    const read = await readBody(c.env.incoming, route.maxBodyBytes, deadlineAt);
    if (read.kind !== 'ok') return t.unreadBeforeAuth(read, undefined, c.req.path);
    const verdict = await route.verify(read.raw, signature);
    if (verdict.kind === 'invalid') return t.deny(undefined, 'bad_secret');
    if (verdict.kind === 'unreadable') return t.refuse(c, undefined, 'bad_json', 400, verdict.why);
    for (const connection of verdict.ignored) {
      o.logger.info({ platform: route.path, connection }, `${route.label} notification for a connection of no tenant (of the app whose secret signed it) ignored`);
      o.onPlatformNotice?.(route.path, undefined, 'ignored');
    }
    for (const tenant of verdict.tenants) {
      await route.requestSync(tenant);
      o.onPlatformNotice?.(route.path, tenant, 'sync_requested');
      o.logger.info({ tenant, platform: route.path }, `${route.label} change notification: incremental run requested`);
    }
    return c.json({ ok: true }, 200);
  });
}

export async function startWebhookServer(o: WebhookServerOptions): Promise<WebhookServer> {
  // The body is read by the routes (body.ts), and an unread rest is never drained: the connection ends instead.
  const listener = getRequestListener(webhookApp(o).fetch, { autoCleanupIncoming: false });
  const server = createBoundedServer((req, res) => void listener(req, res), o.limits ?? DEFAULT_SERVER_LIMITS);
  return listen(server, o.port, o.host);
}
