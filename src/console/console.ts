/**
 * The operator's console: `/console` on the public server (when API_KEYS is set), one page per customer, working
 * without JavaScript. Sign-in takes an API key into a form; the server keeps a session (session.ts) behind an
 * HttpOnly, SameSite=Strict cookie, and every form that changes something carries the session's CSRF token. Every
 * read and action is a call of the control API with the session's key (api-client.ts): what a key limited to some
 * tenants may not see through the API, it does not see here. Answers are never cached, framed or sent as a Referer,
 * and load nothing from elsewhere (Content-Security-Policy).
 */
import type { HttpBindings } from '@hono/node-server';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { deadLetterPageSchema, eventPageSchema, outstandingLinksSchema, runListSchema, runRequestedSchema, runSchema, tenantListSchema, tenantSchema, connectLinkSchema, redeliverySchema } from '../api/schemas.js';
import { digestKeys, keyOf } from '../api/keys.js';
import type { ApiKey } from '../config/api-keys.js';
import { clientAddressOf, type TrustProxy } from '../client-address.js';
import { ENTITIES } from '../glossary.js';
import { sameSecret } from '../guards.js';
import { MinuteLimiter } from '../http-server.js';
import type { Logger } from '../logger.js';
import { requestIdOf } from '../request-id.js';
import { ConsoleApi, query, type ApiFetch, type Problem } from './api-client.js';
import { CSS, JS, h, localeOf, page, type Format, type Frame, type Html } from './html.js';
import {
  STATE_FILTERS,
  deadLettersPage,
  linkMadePage,
  messagePage,
  retryConfirmPage,
  revokeConfirmPage,
  runPage,
  signInPage,
  tenantHref,
  tenantListPage,
  tenantPage,
  type Tenant,
} from './pages.js';
import { SessionStore, cookie, cookieOf, csrfMatches, keyDigestOf, newToken, sessionCookieName, signInCookieName, type Session } from './session.js';

export interface ConsoleDeps {
  keys: readonly ApiKey[];
  /** The control API's app (its `request`): every page reads and acts through it. */
  api: ApiFetch;
  redis: Redis;
  prefix: string;
  /** CONSOLE_SESSION_S: how long a session lasts from sign-in. */
  sessionS: number;
  /** PUBLIC_URL is https: the cookies are `__Host-` and Secure. */
  secure: boolean;
  trustProxy: TrustProxy;
  logger: Logger;
  /** Failed sign-ins a minute per client address before every sign-in from it waits (default 10). */
  signInFailuresPerMin?: number;
}

type Who = { session: Session; key: ApiKey };
type Env = { Bindings: HttpBindings; Variables: { who: Who } };
type Ctx = Context<Env>;

const HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
};
const PAGE_SIZE = 50;
const TENANT_ID = /^[a-z][a-z0-9_-]{0,62}$/;

const html = (status: number, body: Html, headers: Record<string, string> = {}): Response => new Response(body.text, { status, headers: { ...HEADERS, ...headers } });
const seeOther = (location: string, headers: Record<string, string> = {}): Response => new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...headers } });

/** A local path of the console to go back to after signing in (never another site: `//host`, a scheme, a backslash). */
const safeNext = (next: unknown): string | undefined => (typeof next === 'string' && /^\/console(\/[A-Za-z0-9._~%/-]*)?(\?[A-Za-z0-9._~%&=+-]*)?$/.test(next) ? next : undefined);

const formOf = async (c: Ctx): Promise<Record<string, string>> => {
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === 'string'));
};

export function mountConsole(server: Hono<{ Bindings: HttpBindings }>, d: ConsoleDeps): void {
  const app = new Hono<Env>();
  const sessions = new SessionStore(d.redis, d.prefix, d.sessionS);
  const digests = digestKeys(d.keys);
  const failures = new MinuteLimiter(d.signInFailuresPerMin ?? 10);
  const log = d.logger;

  /** The signed-in session and its key, or undefined (none, expired, signed out, or its key changed since). */
  const signedIn = async (c: Ctx): Promise<Who | undefined> => {
    const id = cookieOf(c.req.header('cookie'), sessionCookieName(d.secure));
    const session = await sessions.get(id);
    if (session === undefined) return undefined;
    const key = d.keys.find((k) => k.name === session.keyName);
    if (key === undefined || !sameSecret(keyDigestOf(key.key.reveal()), session.keyDigest)) {
      await sessions.end(session.id);
      log.info({ key: session.keyName }, 'console: a session ended (its key is no longer in API_KEYS)');
      return undefined;
    }
    return { session, key };
  };

  const formatOf = (c: Ctx): Format => ({ locale: localeOf(c.req.header('accept-language')), now: Date.now() });

  app.get('/console/assets/console.css', () => new Response(CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } }));
  app.get('/console/assets/console.js', () => new Response(JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } }));

  const signInForm = (c: Ctx, status: number, o: { error?: string; next?: string }): Response => {
    const token = newToken();
    return html(status, page({ title: 'Sign in' }, signInPage(token, o)), { 'set-cookie': cookie(signInCookieName(d.secure), token, 600, d.secure) });
  };

  app.get('/console/sign-in', async (c) => {
    if ((await signedIn(c)) !== undefined) return seeOther('/console/tenants');
    const reason = c.req.query('ended');
    const next = safeNext(c.req.query('next'));
    return signInForm(c, 200, {
      ...(reason === 'expired' ? { error: 'Your session has ended. Sign in again.' } : reason === 'signed-out' ? { error: 'You are signed out.' } : {}),
      ...(next !== undefined ? { next } : {}),
    });
  });

  app.post('/console/sign-in', bodyLimit({ maxSize: 8 * 1024, onError: () => html(413, page({ title: 'Too large' }, messagePage('Too large', 'The form was over 8 KiB.'))) }), async (c) => {
    const address = clientAddressOf(c.env.incoming.socket.remoteAddress, c.req.header('x-forwarded-for'), d.trustProxy);
    // Failed sign-ins are counted per address; past the limit every sign-in waits for the minute to end.
    const wait = failures.peek(address);
    if (wait > 0) {
      log.warn({ address }, 'console: a sign-in refused: too many failed ones from this address this minute');
      return html(429, page({ title: 'Too many attempts' }, messagePage('Too many attempts', `Wait ${wait} s and try again.`, ['Sign in', '/console/sign-in'])), { 'retry-after': String(wait) });
    }
    const form = await formOf(c);
    const next = safeNext(form['next']);
    const expected = cookieOf(c.req.header('cookie'), signInCookieName(d.secure));
    if (expected === undefined || !csrfMatches({ csrf: expected }, form['_csrf'])) {
      failures.take(address);
      log.warn({ address }, 'console: a sign-in without its form token refused (CSRF)');
      return signInForm(c, 403, { error: 'This sign-in form expired or did not come from this console. Try again.', ...(next ? { next } : {}) });
    }
    const key = keyOf(digests, `Bearer ${(form['key'] ?? '').trim()}`);
    if (key === undefined) {
      failures.take(address);
      log.warn({ address }, 'console: a sign-in with a key that is not one of API_KEYS refused');
      return signInForm(c, 401, { error: 'That is not an API key of this worker.', ...(next ? { next } : {}) });
    }
    const session = await sessions.create(key.name, keyDigestOf(key.key.reveal()));
    log.info({ key: key.name, address }, 'console: signed in');
    return new Response(null, {
      status: 303,
      headers: [
        ['location', next ?? '/console/tenants'],
        ['cache-control', 'no-store'],
        ['set-cookie', cookie(sessionCookieName(d.secure), session.id, d.sessionS, d.secure)],
        ['set-cookie', cookie(signInCookieName(d.secure), '', 0, d.secure)],
      ],
    });
  });

  // Everything else needs a session; a form that changes something needs its CSRF token too.
  const gate: MiddlewareHandler<Env> = async (c, next) => {
    const path = c.req.path;
    if (path === '/console/sign-in' || path.startsWith('/console/assets/')) return next();
    const who = await signedIn(c);
    if (who === undefined) {
      if (c.req.method === 'GET') return seeOther(`/console/sign-in${query({ next: safeNext(path + (new URL(c.req.url).search || '')) })}`);
      return seeOther('/console/sign-in?ended=expired');
    }
    if (c.req.method === 'POST') {
      const form = await formOf(c);
      if (!csrfMatches(who.session, form['_csrf'])) {
        log.warn({ key: who.key.name, path }, 'console: a form without this session\'s CSRF token refused');
        return html(403, page(frameOf(who, 'Refused', []), messagePage('Refused', 'This form did not come from this console session (its CSRF token is missing or wrong). Reload the page and try again.', ['Tenants', '/console/tenants'])));
      }
    }
    c.set('who', who);
    return next();
  };
  app.use('/console/*', bodyLimit({ maxSize: 16 * 1024, onError: () => html(413, page({ title: 'Too large' }, messagePage('Too large', 'The form was over 16 KiB.'))) }));
  app.use('/console/*', gate);
  app.use('/console', gate);

  const whoOf = (c: Ctx): Who => c.get('who');
  const apiOf = (c: Ctx): ConsoleApi => new ConsoleApi(d.api, whoOf(c).key.key.reveal(), requestIdOf(c.req.raw));
  const frameOf = (who: Who, title: string, crumbs: readonly (readonly [string, string])[], extra: Partial<Frame> = {}): Frame => ({
    title,
    keyName: who.key.name,
    csrf: who.session.csrf,
    crumbs: [['Tenants', '/console/tenants'], ...crumbs],
    ...extra,
  });
  const show = (c: Ctx, title: string, crumbs: readonly (readonly [string, string])[], body: Html, extra: Partial<Frame> = {}, status = 200): Response => html(status, page(frameOf(whoOf(c), title, crumbs, extra), body));
  /** An API problem as a page: its status, its detail (a tenant this key may not see is a 404, as in the API). */
  const problemPage = (c: Ctx, what: string, p: { status: number; problem: Problem }, back?: readonly [string, string]): Response =>
    show(c, what, [], messagePage(what, h`${p.problem.detail}`, back ?? ['Tenants', '/console/tenants']), {}, p.status);
  const logAction = (c: Ctx, action: string, fields: Record<string, unknown>): void => log.info({ key: whoOf(c).key.name, action, ...fields }, 'console: action');

  const tenantOf = async (c: Ctx, id: string): Promise<Tenant | Response> => {
    const t = await apiOf(c).get(`/v1/tenants/${id}`, tenantSchema);
    return t.ok ? t.value : problemPage(c, 'No such tenant', t);
  };

  // A tenant id in a path is one the API could name (it goes into the API's path as it is).
  const tenantInPath: MiddlewareHandler<Env> = async (c, next) => {
    if (TENANT_ID.test(c.req.param('id') ?? '')) return next();
    return problemPage(c, 'No such tenant', { status: 404, problem: { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such tenant' } });
  };
  app.use('/console/tenants/:id', tenantInPath);
  app.use('/console/tenants/:id/*', tenantInPath);

  app.get('/console', () => seeOther('/console/tenants'));

  app.get('/console/tenants', async (c) => {
    const q = (c.req.query('q') ?? '').trim().slice(0, 100);
    const stateWord = c.req.query('state') ?? '';
    const state = STATE_FILTERS.some(([v]) => v === stateWord) ? stateWord : '';
    const cursor = c.req.query('cursor');
    const list = await apiOf(c).get(`/v1/tenants${query({ limit: PAGE_SIZE, q, state, cursor })}`, tenantListSchema);
    if (!list.ok) return problemPage(c, 'Tenants', list);
    return show(c, 'Tenants', [], tenantListPage(formatOf(c), list.value, { q, state, ...(cursor !== undefined ? { cursor } : {}) }));
  });

  /** The flash of a page an action redirected to (`?done=`). */
  const DONE: Record<string, string> = {
    'link-revoked': 'The connect link is revoked: opened now, it is refused.',
    redelivered: 'The event is queued for delivery again.',
    'connection-revoked': 'The connection is revoked and its tokens deleted.',
  };

  app.get('/console/tenants/:id', async (c) => {
    const id = c.req.param('id');
    const t = await tenantOf(c, id);
    if (t instanceof Response) return t;
    const api = apiOf(c);
    const [runs, links, events] = await Promise.all([
      api.get(`/v1/tenants/${id}/runs?limit=50`, runListSchema),
      t.connection === null ? undefined : api.get(`/v1/tenants/${id}/connect-links`, outstandingLinksSchema),
      api.get(`/v1/events${query({ tenantId: id, limit: 20, order: 'newest' })}`, eventPageSchema),
    ]);
    if (!runs.ok) return problemPage(c, id, runs);
    const done = DONE[c.req.query('done') ?? ''];
    return show(
      c,
      id,
      [[id, tenantHref(id)]],
      tenantPage(formatOf(c), {
        tenant: t,
        runs: runs.value.items,
        links: links?.ok ? links.value.items : undefined,
        ...(links !== undefined && !links.ok ? { linksOff: links.problem.detail } : {}),
        events: events.ok ? events.value.items : [],
        csrf: whoOf(c).session.csrf,
        once: newToken,
      }),
      done !== undefined ? { flash: { kind: 'ok', text: done } } : {},
    );
  });

  app.post('/console/tenants/:id/runs', async (c) => {
    const id = c.req.param('id');
    const form = z.object({ mode: z.enum(['incremental', 'full', 'reconcile']), _once: z.string().max(64).optional() }).safeParse(await formOf(c));
    if (!form.success) return show(c, 'Run not requested', [], messagePage('Run not requested', 'Choose incremental, full or reconcile.', ['Back', tenantHref(id)]), {}, 400);
    const r = await apiOf(c).send(`/v1/tenants/${id}/runs`, runRequestedSchema, { mode: form.data.mode }, form.data._once);
    if (!r.ok) return problemPage(c, 'Run not requested', r, ['Back', tenantHref(id)]);
    logAction(c, 'run requested', { tenant: id, mode: form.data.mode, runId: r.value.runId, deduplicated: r.value.deduplicated });
    return seeOther(`${tenantHref(id)}/runs/${encodeURIComponent(r.value.runId)}?requested=${r.value.deduplicated ? 'joined' : 'new'}`);
  });

  app.get('/console/tenants/:id/runs/:runId', async (c) => {
    const { id, runId } = c.req.param();
    const r = await apiOf(c).get(`/v1/tenants/${id}/runs/${encodeURIComponent(runId)}`, runSchema);
    if (!r.ok) return problemPage(c, `Run ${runId}`, r, ['Back', tenantHref(id)]);
    const requested = c.req.query('requested');
    const under = r.value.state !== 'finished';
    return show(c, `Run ${runId}`, [[id, tenantHref(id)], [runId, `${tenantHref(id)}/runs/${encodeURIComponent(runId)}`]], runPage(formatOf(c), id, r.value), {
      ...(under ? { refreshS: 5 } : {}),
      ...(requested !== undefined ? { flash: { kind: 'ok' as const, text: requested === 'joined' ? `A ${r.value.mode} run was already queued: this request joined it.` : `A ${r.value.mode} run is requested.` } } : {}),
    });
  });

  app.get('/console/tenants/:id/dead-letters', async (c) => {
    const id = c.req.param('id');
    const t = await tenantOf(c, id);
    if (t instanceof Response) return t;
    const entityWord = c.req.query('entity') ?? '';
    const entity = (ENTITIES as readonly string[]).includes(entityWord) ? entityWord : '';
    const cursor = c.req.query('cursor');
    const p = await apiOf(c).get(`/v1/tenants/${id}/dead-letters${query({ limit: PAGE_SIZE, entity, cursor })}`, deadLetterPageSchema);
    if (!p.ok) return problemPage(c, 'Dead letters', p, ['Back', tenantHref(id)]);
    return show(c, `Dead letters of ${id}`, [[id, tenantHref(id)], ['Dead letters', `${tenantHref(id)}/dead-letters`]], deadLettersPage(formatOf(c), t, p.value, { entity, ...(cursor !== undefined ? { cursor } : {}) }));
  });

  app.get('/console/tenants/:id/dead-letters/retry', async (c) => {
    const id = c.req.param('id');
    const t = await tenantOf(c, id);
    if (t instanceof Response) return t;
    return show(c, `Retry dead letters of ${id}`, [[id, tenantHref(id)], ['Retry', `${tenantHref(id)}/dead-letters/retry`]], retryConfirmPage(formatOf(c), t, whoOf(c).session.csrf, newToken()));
  });

  app.post('/console/tenants/:id/dead-letters/replay', async (c) => {
    const id = c.req.param('id');
    const t = await tenantOf(c, id);
    if (t instanceof Response) return t;
    const once = z.string().max(64).optional().safeParse((await formOf(c))['_once']);
    const r = await apiOf(c).send(`/v1/tenants/${id}/dead-letters/replay`, runRequestedSchema, undefined, once.success ? once.data : undefined);
    if (!r.ok) return problemPage(c, 'Replay not queued', r, ['Back', tenantHref(id)]);
    logAction(c, 'dead letters replayed', { tenant: id, runId: r.value.runId });
    const f = formatOf(c);
    const text = h`Queued a replay of ${id}'s dead letters (job ${r.value.jobId}): ${new Intl.NumberFormat(f.locale).format(t.deadLetters.total)} dead letters. <a href="${tenantHref(id)}/runs/${encodeURIComponent(r.value.runId)}">Follow the replay run</a>.`;
    return show(c, 'Replay queued', [[id, tenantHref(id)]], messagePage('Replay queued', text, ['Back to ' + id, tenantHref(id)]), { flash: { kind: 'ok', text: 'The replay is queued.' } }, 202);
  });

  app.post('/console/tenants/:id/connect-links', async (c) => {
    const id = c.req.param('id');
    const form = z.object({ expires: z.enum(['1h', '1d', '7d', '30d']), reconnect: z.literal('true').optional(), _once: z.string().max(64).optional() }).safeParse(await formOf(c));
    if (!form.success) return show(c, 'No link made', [], messagePage('No link made', 'Choose how long the link works: 1 hour, 1 day, 7 days or 30 days.', ['Back', tenantHref(id)]), {}, 400);
    const r = await apiOf(c).send(`/v1/tenants/${id}/connect-links`, connectLinkSchema, { expires: form.data.expires, reconnect: form.data.reconnect === 'true' }, form.data._once);
    if (!r.ok) return problemPage(c, 'No link made', r, ['Back', tenantHref(id)]);
    logAction(c, 'connect link made', { tenant: id, link: r.value.linkId, reconnect: r.value.reconnect });
    return show(c, `Connect link for ${id}`, [[id, tenantHref(id)]], linkMadePage(formatOf(c), id, r.value), {}, 201);
  });

  app.post('/console/tenants/:id/connect-links/:linkId/revoke', async (c) => {
    const { id, linkId } = c.req.param();
    const r = await apiOf(c).act('DELETE', `/v1/tenants/${id}/connect-links/${encodeURIComponent(linkId)}`);
    if (!r.ok) return problemPage(c, 'Link not revoked', r, ['Back', tenantHref(id)]);
    logAction(c, 'connect link revoked', { tenant: id, link: linkId });
    return seeOther(`${tenantHref(id)}?done=link-revoked`);
  });

  app.get('/console/tenants/:id/connection/revoke', async (c) => {
    const id = c.req.param('id');
    const t = await tenantOf(c, id);
    if (t instanceof Response) return t;
    return show(c, `Revoke ${id}`, [[id, tenantHref(id)], ['Revoke', `${tenantHref(id)}/connection/revoke`]], revokeConfirmPage(t, whoOf(c).session.csrf));
  });

  app.post('/console/tenants/:id/connection/revoke', async (c) => {
    const id = c.req.param('id');
    const r = await apiOf(c).act('DELETE', `/v1/tenants/${id}/connection`);
    if (!r.ok) return problemPage(c, 'Connection not revoked', r, ['Back', tenantHref(id)]);
    logAction(c, 'connection revoked', { tenant: id });
    return seeOther(`${tenantHref(id)}?done=connection-revoked`);
  });

  app.post('/console/events/:eventId/redeliver', async (c) => {
    const eventId = c.req.param('eventId');
    const tenant = (await formOf(c))['tenant'];
    const back = typeof tenant === 'string' && TENANT_ID.test(tenant) ? tenantHref(tenant) : '/console/tenants';
    const r = await apiOf(c).send(`/v1/events/${encodeURIComponent(eventId)}/redeliver`, redeliverySchema);
    if (!r.ok) return problemPage(c, 'Not redelivered', r, ['Back', back]);
    logAction(c, 'event redelivered', { eventId, tenant });
    return seeOther(`${back}?done=redelivered`);
  });

  app.post('/console/sign-out', async (c) => {
    const who = whoOf(c);
    await sessions.end(who.session.id);
    log.info({ key: who.key.name }, 'console: signed out');
    return seeOther('/console/sign-in?ended=signed-out', { 'set-cookie': cookie(sessionCookieName(d.secure), '', 0, d.secure) });
  });

  app.all('/console/*', (c) => show(c, 'Not found', [], messagePage('Not found', `Nothing is served at ${c.req.path}.`, ['Tenants', '/console/tenants']), {}, 404));
  server.route('/', app);
}
