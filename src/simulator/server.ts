/**
 * The simulator's HTTP server (node:http, keep-alive friendly) and the path of one request:
 *
 *   API request:   route -> token checked on arrival (401) -> in flight -> body -> rate limit (429)
 *                  -> fault decision (script, then random rates) -> reset | latency -> 5xx | 422 | 429 | process -> drop | answer
 *   token request: route -> body -> fault decision -> reset | latency -> 5xx | 429 | issue -> drop | answer
 *   /__sim:        admin, no auth, no faults, not counted.
 *
 * Handlers are synchronous, so a write is committed exactly when it is processed; a `drop` destroys the socket
 * after that, a `reset` before anything is processed.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { contactCreateSchema, type ContactCreate } from '../collections/schemas.js';
import { Counters } from './counters.js';
import { FaultPlan, type FaultDecision } from './faults.js';
import { ApiError, readBody, send, validate, type Reply } from './http.js';
import { todayUtc } from '../dates.js';
import { renderContact, renderInvoice, renderPayment } from './render.js';
import { ADMIN_PREFIX, handleAdmin, seedPaymentSchema } from './routes/admin.js';
import { issueToken } from './routes/auth.js';
import type { SimContext } from './routes/context.js';
import { API_PREFIX, matchApi, TOKEN_PATH, TOKEN_ROUTE } from './routes/table.js';
import { TenantStore } from './store.js';
import { Templates } from './templates.js';
import { TokenAuthority } from './tokens.js';
import type { SeedPayment, Simulator, SimulatorData, SimulatorOptions } from './types.js';
import { sleep } from '../sleep.js';

const UNKNOWN_ROUTE = '<unknown>';
const AUTH_DETAIL = {
  missing: 'Not authenticated',
  expired: 'Token expired',
  superseded: 'Token superseded by a newer token',
  invalid: 'Invalid token',
} as const;

function toReply(err: unknown): Reply {
  if (err instanceof ApiError) return err.reply();
  const msg = err instanceof Error ? err.message : String(err);
  return { status: 500, body: { detail: `Internal error: ${msg}` } };
}

export async function startSimulator(opts: SimulatorOptions): Promise<Simulator> {
  const tokens = new TokenAuthority(opts.tokenLifetimeMs ?? 300_000);
  for (const c of opts.clients) tokens.setClient(c.clientId, c.clientSecret);
  const counters = new Counters();
  const faults = new FaultPlan(opts.faults ?? {});
  const templates = new Templates();
  const stores = new Map<string, TenantStore>();
  const store = (clientId: string): TenantStore => {
    let s = stores.get(clientId);
    if (!s) stores.set(clientId, (s = new TenantStore()));
    return s;
  };
  const today = (): string => todayUtc(Date.now());
  const ctx: SimContext = { store, templates, today, nowIso: () => new Date().toISOString() };

  /** Carries out a fault decision around `process` (which commits and returns the answer). */
  async function run(route: string, decision: FaultDecision, req: IncomingMessage, res: ServerResponse, process: () => Reply, isWrite: boolean): Promise<void> {
    if (decision.kind === 'reset') {
      counters.fault('reset');
      counters.request(route, 'reset');
      req.socket.destroy();
      return;
    }
    const delay = faults.delayMs();
    if (delay > 0) await sleep(delay);
    if (decision.kind === 'status') {
      counters.fault(String(decision.status));
      counters.request(route, String(decision.status));
      const detail = decision.status === 422 ? [{ loc: ['body'], msg: 'Rejected (simulated)', type: 'value_error' }] : 'Internal error (simulated)';
      send(res, { status: decision.status, body: { detail } });
      return;
    }
    if (decision.kind === '429') {
      counters.fault(decision.source);
      counters.request(route, '429');
      send(res, { status: 429, body: { detail: 'Rate limit exceeded' }, headers: { 'retry-after': String(decision.retryAfterS) } });
      return;
    }
    let reply: Reply;
    try {
      reply = process();
    } catch (err) {
      reply = toReply(err);
    }
    if (isWrite && reply.status < 300) counters.write();
    if (decision.kind === 'drop') {
      counters.fault('drop');
      counters.request(route, 'drop');
      req.socket.destroy();
      return;
    }
    counters.request(route, String(reply.status));
    send(res, reply);
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, method: string, path: string, query: URLSearchParams): Promise<void> {
    const m = matchApi(method, path);
    if (m.kind !== 'route') {
      counters.request(UNKNOWN_ROUTE, m.kind === 'not-found' ? '404' : '405');
      if (m.kind === 'not-found') send(res, { status: 404, body: { detail: 'Not Found' } });
      else send(res, { status: 405, body: { detail: 'Method Not Allowed' }, headers: { allow: m.allow } });
      return;
    }
    const { route, handler, write } = m.api;
    const auth = tokens.check(req.headers.authorization);
    if (!auth.ok) {
      counters.unauthorized(auth.reason);
      counters.request(route, '401');
      send(res, { status: 401, body: { detail: AUTH_DETAIL[auth.reason], reason: auth.reason }, headers: { 'www-authenticate': 'Bearer' } });
      return;
    }
    const { clientId } = auth;
    const entry = counters.enter(clientId, auth.gen, route);
    try {
      const body = await readBody(req);
      if (body === null) {
        counters.request(route, '413');
        send(res, { status: 413, body: { detail: 'Request body too large' } });
        return;
      }
      const retryAfter = faults.rateLimit(clientId);
      if (retryAfter !== null) {
        counters.fault('rate-limit');
        counters.request(route, '429');
        send(res, { status: 429, body: { detail: 'Rate limit exceeded' }, headers: { 'retry-after': String(retryAfter) } });
        return;
      }
      await run(route, faults.decide(route, { url: req.url, body }), req, res, () => handler({ ctx, clientId, body, query, params: m.params }), write);
    } finally {
      counters.leave(entry);
    }
  }

  async function handleToken(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    if (method !== 'POST') {
      counters.request(UNKNOWN_ROUTE, '405');
      send(res, { status: 405, body: { detail: 'Method Not Allowed' }, headers: { allow: 'POST' } });
      return;
    }
    const body = await readBody(req);
    if (body === null) {
      counters.request(TOKEN_ROUTE, '413');
      send(res, { status: 413, body: { detail: 'Request body too large' } });
      return;
    }
    await run(TOKEN_ROUTE, faults.decide(TOKEN_ROUTE), req, res, () => issueToken(tokens, counters, body), false);
  }

  async function handleAdminRequest(req: IncomingMessage, res: ServerResponse, method: string, path: string, query: URLSearchParams): Promise<void> {
    const body = (await readBody(req)) ?? '';
    let reply: Reply;
    try {
      reply = handleAdmin(sim, method, path, query, body);
    } catch (err) {
      reply = toReply(err);
    }
    send(res, reply);
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://simulator');
    const path = url.pathname;
    if (path.startsWith(`${API_PREFIX}/`)) return handleApi(req, res, method, path.slice(API_PREFIX.length), url.searchParams);
    if (path === TOKEN_PATH) return handleToken(req, res, method);
    if (path.startsWith(`${ADMIN_PREFIX}/`)) return handleAdminRequest(req, res, method, path.slice(ADMIN_PREFIX.length), url.searchParams);
    counters.request(UNKNOWN_ROUTE, '404');
    send(res, { status: 404, body: { detail: 'Not Found' } });
  }

  const server = createServer((req, res) => {
    onRequest(req, res).catch((err: unknown) => send(res, toReply(err)));
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1');
  await once(server, 'listening');
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  const origin = `http://${host}:${port}`;

  const data = (clientId: string): SimulatorData => {
    const s = stores.get(clientId);
    if (!s) return { contacts: [], invoices: [], payments: [], calls: [] };
    const d = today();
    return {
      contacts: s.contactList.map((c) => renderContact(c, d)),
      invoices: s.invoiceList.map((i) => renderInvoice(i, d)),
      payments: s.paymentList.map((p) => ({ ...renderPayment(p), invoiceUuid: p.invoice.uuid })),
      calls: s.calls.map((c) => structuredClone(c)),
    };
  };

  let closing: Promise<void> | null = null;
  const sim: Simulator = {
    origin,
    baseUrl: `${origin}${API_PREFIX}`,
    authUrl: origin,
    setFaults: (f) => faults.set(f),
    setTokenLifetime: (ms) => tokens.setLifetime(ms),
    setClient: (clientId, clientSecret) => tokens.setClient(clientId, clientSecret),
    addTemplate: (t) => templates.add(t),
    counters: () => counters.snapshot(),
    inFlight: () => counters.inFlightByRoute(),
    resetCounters: () => counters.reset(),
    data,
    seedContact: (clientId: string, body: ContactCreate) =>
      renderContact(store(clientId).createContact(validate(contactCreateSchema, body, 'body')), today()),
    seedPayment: (clientId: string, p: SeedPayment) =>
      renderPayment(store(clientId).addPayment(validate(seedPaymentSchema, p, 'body'), today())),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
  return sim;
}
