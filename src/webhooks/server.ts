/**
 * The webhook receiver: its own HTTP server (WEBHOOK_PORT; off when unset), apart from the ops port, which stays
 * on loopback. `POST /webhooks/calls/{tenantId}`: call outcomes from the collections service.
 *
 *   tenant unknown, or without `calls.webhookSecret`          401, nothing recorded
 *   Content-Type not JSON                                      415
 *   body over 64 KiB                                           413
 *   neither `Authorization: Bearer <secret>` nor a hex         401, nothing recorded
 *   HMAC-SHA256 of the raw body in WEBHOOK_SIGNATURE_HEADER
 *   over WEBHOOK_RATE_PER_MIN for the tenant                   429 with Retry-After
 *   body not JSON                                              400
 *   otherwise                                                  200 at once: the event is kept and a job settles it
 *
 * `POST /webhooks/quickbooks`: Intuit's change notifications (issue 15), verified with `intuit-signature`; each
 * realm's tenant gets one deduplicated, debounced incremental run (quickBooksRoute below).
 *
 * Secrets are compared in constant time (digests of equal length). The work is done by a job (`accept`), so the
 * answer takes one or two Redis round trips.
 */
import { createHmac, createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { listen } from '../http-server.js';
import { getRequestListener } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import type { Secret } from '../config/secret.js';
import type { Logger } from '../logger.js';

export const MAX_BODY_BYTES = 64 * 1024;

/** Why a request was refused (a metric outcome is `refused` whatever the reason; the log says which). */
export type Refusal = 'unknown_tenant' | 'bad_secret' | 'too_large' | 'not_json' | 'bad_json' | 'rate_limited';

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
}

/** What the QuickBooks route needs: the companies it may hear about, and a run to request. */
export interface QuickBooksNotifications {
  /** The quickbooks tenants that have a webhookVerifierToken. */
  tenants(): readonly { id: string; realmId: string; verifierToken: Secret }[];
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

/** Intuit's notifications may carry many entities; a bigger cap than a call event's. */
export const MAX_QUICKBOOKS_BODY_BYTES = 512 * 1024;

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

const sha256 = (b: Uint8Array | string): Buffer => createHash('sha256').update(b).digest();

/** Constant time whatever the lengths: both sides are hashed first. */
function same(a: Uint8Array | string, b: Uint8Array | string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Whether the request proves the secret: a Bearer token equal to it, or the body's HMAC under it (hex, `sha256=` allowed). */
export function authentic(secret: Secret, raw: Uint8Array, authorization: string | undefined, signature: string | undefined): boolean {
  const key = secret.reveal();
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? '')?.[1];
  let ok = bearer !== undefined && same(bearer, key);
  const sig = signature?.trim().replace(/^sha256=/i, '').toLowerCase();
  if (sig !== undefined && /^[0-9a-f]{64}$/.test(sig)) ok = same(Buffer.from(sig, 'hex'), createHmac('sha256', key).update(raw).digest()) || ok;
  return ok;
}

/** Requests per tenant in the current minute (per process). */
class RateLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly perMin: number) {}
  /** 0 when allowed, else the seconds until the window ends. */
  take(key: string, now = Date.now()): number {
    const w = this.#windows.get(key);
    if (!w || now - w.start >= 60_000) {
      this.#windows.set(key, { start: now, count: 1 });
      return 0;
    }
    if (w.count >= this.perMin) return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
    w.count += 1;
    return 0;
  }
}

function isJsonType(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && /^application\/[a-z0-9.+-]+\+json$/.test(type));
}

export function webhookApp(o: WebhookServerOptions): Hono {
  const limiter = new RateLimiter(o.ratePerMin);
  const refuse = (c: Context, tenant: string | undefined, reason: Refusal, status: 400 | 401 | 413 | 415 | 429, detail: string, headers: Record<string, string> = {}): Response => {
    o.onRefused?.(tenant, reason);
    o.logger.warn({ tenant: tenant ?? '(unknown)', reason, status }, 'webhook refused');
    return c.json({ detail }, status, headers);
  };
  const app = new Hono();
  app.post(
    '/webhooks/calls/:tenant',
    async (c, next) => {
      const tenant = c.req.param('tenant');
      if (o.secretOf(tenant) === undefined) return refuse(c, undefined, 'unknown_tenant', 401, 'unauthorized');
      if (!isJsonType(c.req.header('content-type'))) return refuse(c, tenant, 'not_json', 415, 'the body must be JSON (Content-Type: application/json)');
      return next();
    },
    bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => refuse(c, c.req.param('tenant'), 'too_large', 413, `the body is over ${MAX_BODY_BYTES} bytes`) }),
    async (c) => {
      const tenant = c.req.param('tenant');
      const secret = o.secretOf(tenant);
      const raw = new Uint8Array(await c.req.arrayBuffer());
      if (!secret || !authentic(secret, raw, c.req.header('authorization'), c.req.header(o.signatureHeader))) return refuse(c, tenant, 'bad_secret', 401, 'unauthorized');
      const wait = limiter.take(tenant);
      if (wait > 0) return refuse(c, tenant, 'rate_limited', 429, 'too many webhook requests for this tenant', { 'retry-after': String(wait) });
      let body: unknown;
      try {
        body = JSON.parse(Buffer.from(raw).toString('utf8'));
      } catch {
        return refuse(c, tenant, 'bad_json', 400, 'the body is not valid JSON');
      }
      const result = await o.accept(tenant, body, raw);
      o.onAccepted?.(tenant, result);
      return c.json({ ok: true, eventId: result.eventId, duplicate: result.duplicate }, 200);
    },
  );
  if (o.quickbooks) quickBooksRoute(app, o.quickbooks, o, refuse);
  app.notFound((c) => c.json({ detail: 'not found' }, 404));
  app.onError((err, c) => {
    o.logger.error({ err: err.message, path: c.req.path }, 'webhook: request failed (the sender should retry)');
    return c.json({ detail: 'not accepted, try again later' }, 503);
  });
  return app;
}

type Refuse = (c: Context, tenant: string | undefined, reason: Refusal, status: 400 | 401 | 413 | 415 | 429, detail: string) => Response;

/**
 * `POST /webhooks/quickbooks`: the body's HMAC-SHA256 (base64, `intuit-signature`) under the verifier token of the
 * tenant(s) of a realm it names; 401 when no token verifies it (nothing changes). Each realm whose tenant's token
 * verified it gets one requested run; a realm of no tenant is logged and ignored. 200 once the runs are requested.
 */
function quickBooksRoute(app: Hono, qb: QuickBooksNotifications, o: WebhookServerOptions, refuse: Refuse): void {
  app.post(
    '/webhooks/quickbooks',
    bodyLimit({ maxSize: MAX_QUICKBOOKS_BODY_BYTES, onError: (c) => refuse(c, undefined, 'too_large', 413, `the body is over ${MAX_QUICKBOOKS_BODY_BYTES} bytes`) }),
    async (c) => {
      const raw = new Uint8Array(await c.req.arrayBuffer());
      const signature = Buffer.from(c.req.header('intuit-signature')?.trim() ?? '', 'base64');
      // One HMAC per verifier token (one per Intuit app), not per tenant: the companies of one app share it.
      const macs = new Map<string, Buffer>();
      const macUnder = (token: string): Buffer => {
        let mac = macs.get(token);
        if (mac === undefined) macs.set(token, (mac = createHmac('sha256', token).update(raw).digest()));
        return mac;
      };
      const verified = signature.length === 0 ? [] : qb.tenants().filter((t) => same(signature, macUnder(t.verifierToken.reveal())));
      if (verified.length === 0) return refuse(c, undefined, 'bad_secret', 401, 'unauthorized');
      let parsed;
      try {
        parsed = intuitNotificationSchema.safeParse(JSON.parse(Buffer.from(raw).toString('utf8')));
      } catch {
        return refuse(c, undefined, 'bad_json', 400, 'the body is not valid JSON');
      }
      if (!parsed.success) return refuse(c, undefined, 'bad_json', 400, 'not a QuickBooks change notification (eventNotifications[].realmId)');
      const requested = new Set<string>();
      for (const n of parsed.data.eventNotifications) {
        const tenants = verified.filter((t) => t.realmId === n.realmId);
        if (tenants.length === 0) {
          o.logger.info({ realmId: n.realmId }, 'QuickBooks notification for a realm of no tenant (of the app whose token signed it) ignored');
          o.onQuickBooks?.(undefined, 'ignored');
          continue;
        }
        for (const t of tenants) {
          if (requested.has(t.id)) continue;
          requested.add(t.id);
          await qb.requestSync(t.id);
          o.onQuickBooks?.(t.id, 'sync_requested');
          o.logger.info({ tenant: t.id, realmId: n.realmId, entities: n.dataChangeEvent?.entities.length ?? 0 }, 'QuickBooks change notification: incremental run requested');
        }
      }
      return c.json({ ok: true }, 200);
    },
  );
}

export async function startWebhookServer(o: WebhookServerOptions): Promise<WebhookServer> {
  const listener = getRequestListener(webhookApp(o).fetch);
  const server: Server = createServer((req, res) => void listener(req, res));
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  return listen(server, o.port, o.host);
}
