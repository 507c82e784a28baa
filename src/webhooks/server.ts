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
 * `POST /webhooks/quickbooks`: Intuit's change notifications (issue 15), verified with `intuit-signature`; each
 * realm's tenant gets one deduplicated, debounced incremental run (quickBooksRoute below). Served only while a tenant
 * has a `webhookVerifierToken` (else answered from its headers as an unknown path), bodies up to 64 KiB.
 *
 * Secrets are compared in constant time (digests of equal length); an unknown tenant's request is checked against
 * a stand-in secret, so it costs what a known tenant's does (the body is read, within the same bounds, when the
 * request carries a signature over it). Only what authentication needs is read before it succeeds: a request with
 * neither a Bearer token nor a signature is answered from its headers. Every path but these routes (and those added
 * through `routes`: the connect links of src/connect) answers the same 401. The work is done by a job (`accept`), so the answer takes one or two Redis round trips.
 */
import { createHmac, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { Secret } from '../secret.js';
import { createBoundedServer, DEFAULT_SERVER_LIMITS, listen, MinuteLimiter, type ServerLimits } from '../http-server.js';
import { parseJsonBounded } from '../json-bounded.js';
import type { Logger } from '../logger.js';
import { readBody, type BodyRead } from './body.js';
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
  /** Counts what a QuickBooks notification led to, per tenant (undefined: a realm of no tenant). */
  onQuickBooks?(tenantId: string | undefined, outcome: 'sync_requested' | 'ignored'): void;
  /** QuickBooks change notifications (`POST /webhooks/quickbooks`); absent: that route is not served. */
  quickbooks?: QuickBooksNotifications;
  /**
   * More routes of the public server (the connect links: src/connect), added before the catch-all; `unauthorized`
   * is this server's one 401, for every request they cannot authenticate.
   */
  routes?: (app: Hono<Env>, unauthorized: () => Response) => void;
}

/** What the QuickBooks route needs: the companies it may hear about, and a run to request. */
export interface QuickBooksNotifications {
  /**
   * Whether any tenant in force has a verifier token (read at each request: the tenants file may change). False: the
   * route is not served, and a request is answered from its headers as an unknown path (no body read, no HMAC).
   */
  listening(): boolean;
  /** The quickbooks tenants that have a webhookVerifierToken (and a realm: the tenants file's, or a connect link's). */
  tenants(): readonly { id: string; realmId: string; verifierToken: Secret }[] | Promise<readonly { id: string; realmId: string; verifierToken: Secret }[]>;
  /** Requests one (deduplicated, debounced) incremental run of the tenant. */
  requestSync(tenantId: string): Promise<void>;
}

/** Intuit's change notification (only what is read of it: the realms; entities are logged by count). */
const intuitNotificationSchema = z.object({
  eventNotifications: z.array(
    z.object({
      realmId: z.string().min(1),
      dataChangeEvent: z.object({ entities: z.array(z.object({ name: z.string(), id: z.string(), operation: z.string() }).loose()) }).loose().optional(),
    }).loose(),
  ),
});

/**
 * The largest notification read: Intuit's are a few KB (an entity change is about 100 bytes), and each is read and
 * its HMAC computed before it is authenticated, so the cap bounds what anyone can make the server do (decision 0173).
 */
export const MAX_QUICKBOOKS_BODY_BYTES = 64 * 1024;

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

const sha256 = (b: Uint8Array | string): Buffer => createHash('sha256').update(b).digest();

/** Constant time whatever the lengths: both sides are hashed first. */
function same(a: Uint8Array | string, b: Uint8Array | string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Whether `Authorization: Bearer <token>` carries `key` (false without one). */
export function bearerMatches(key: string, authorization: string | undefined): boolean {
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? '')?.[1];
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

function isJsonType(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && /^application\/[a-z0-9.+-]+\+json$/.test(type));
}

export type Env = { Bindings: HttpBindings };
type Status = 400 | 401 | 408 | 413 | 415 | 429;

/** The one answer to every unauthenticated request: the same status, body and headers whatever the reason. */
const UNAUTHORIZED_BODY = JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'unauthorized' });
/** RFC 9457 problem details (decision 0144), like every error of the control API; nothing in it depends on the request. */
const unauthorized = (): Response => new Response(UNAUTHORIZED_BODY, { status: 401, headers: { 'content-type': 'application/problem+json', connection: 'close' } });

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
    return c.json({ detail }, status, headers);
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
        return c.json({ detail: 'aborted' }, 400);
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
  if (o.quickbooks) quickBooksRoute(app, o.quickbooks, o, { limits, standIn, deny, refuse, unreadBeforeAuth });
  o.routes?.(app, unauthorized);
  // Nothing else is served, and an unknown path says no more than a refused request (DESIGN.md "The public side").
  app.notFound(() => unauthorized());
  app.onError((err, c) => {
    o.logger.error({ err: err.message, path: c.req.path }, 'webhook: request failed (the sender should retry)');
    return c.json({ detail: 'not accepted, try again later' }, 503);
  });
  return app;
}

interface RouteTools {
  limits: ServerLimits;
  standIn: string;
  deny(tenant: string | undefined, reason: Refusal): Response;
  refuse(c: Context<Env>, tenant: string | undefined, reason: Refusal, status: Exclude<Status, 401>, detail: string): Response;
  unreadBeforeAuth(r: Exclude<BodyRead, { kind: 'ok' }>, tenant: string | undefined, path: string): Response;
}

/**
 * `POST /webhooks/quickbooks`: the body's HMAC-SHA256 (base64, `intuit-signature`) under the verifier token of the
 * tenant(s) of a realm it names; 401 when no token verifies it (nothing changes), and without a signature the body
 * is not read. Each realm whose tenant's token verified it gets one requested run; a realm of no tenant is logged
 * and ignored. 200 once the runs are requested.
 */
function quickBooksRoute(app: Hono<Env>, qb: QuickBooksNotifications, o: WebhookServerOptions, t: RouteTools): void {
  app.post('/webhooks/quickbooks', async (c) => {
    // No tenant could verify a notification: not served (the one 401 of an unknown path, from the headers alone).
    if (!qb.listening()) return c.notFound();
    const deadlineAt = Date.now() + t.limits.requestTimeoutMs;
    const signature = Buffer.from(c.req.header('intuit-signature')?.trim() ?? '', 'base64');
    if (signature.length === 0) return t.deny(undefined, 'bad_secret');
    const read = await readBody(c.env.incoming, MAX_QUICKBOOKS_BODY_BYTES, deadlineAt);
    if (read.kind !== 'ok') return t.unreadBeforeAuth(read, undefined, c.req.path);
    const raw = read.raw;
    // One HMAC per verifier token (one per Intuit app), not per tenant: the companies of one app share it.
    const macs = new Map<string, Buffer>();
    const macUnder = (token: string): Buffer => {
      let mac = macs.get(token);
      if (mac === undefined) macs.set(token, (mac = createHmac('sha256', token).update(raw).digest()));
      return mac;
    };
    const tenants = await qb.tenants();
    // With no verifier token at all, the stand-in costs what one token would.
    if (tenants.length === 0) same(signature, macUnder(t.standIn));
    const verified = tenants.filter((v) => same(signature, macUnder(v.verifierToken.reveal())));
    if (verified.length === 0) return t.deny(undefined, 'bad_secret');
    const json = parseJsonBounded(raw.toString('utf8'), MAX_BODY_DEPTH);
    if (!json.ok) return t.refuse(c, undefined, 'bad_json', 400, json.why === 'too_deep' ? `the body nests deeper than ${MAX_BODY_DEPTH} levels` : 'the body is not valid JSON');
    const parsed = intuitNotificationSchema.safeParse(json.value);
    if (!parsed.success) return t.refuse(c, undefined, 'bad_json', 400, 'not a QuickBooks change notification (eventNotifications[].realmId)');
    const requested = new Set<string>();
    for (const n of parsed.data.eventNotifications) {
      const realmTenants = verified.filter((v) => v.realmId === n.realmId);
      if (realmTenants.length === 0) {
        o.logger.info({ realmId: n.realmId }, 'QuickBooks notification for a realm of no tenant (of the app whose token signed it) ignored');
        o.onQuickBooks?.(undefined, 'ignored');
        continue;
      }
      for (const v of realmTenants) {
        if (requested.has(v.id)) continue;
        requested.add(v.id);
        await qb.requestSync(v.id);
        o.onQuickBooks?.(v.id, 'sync_requested');
        o.logger.info({ tenant: v.id, realmId: n.realmId, entities: n.dataChangeEvent?.entities.length ?? 0 }, 'QuickBooks change notification: incremental run requested');
      }
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
