/**
 * The project's own Odoo double, written from Odoo's published external API documentation (no code of Odoo's): a real
 * HTTP server on 127.0.0.1 serving both transports from one in-memory database of several companies.
 *
 * - JSON-2 (Odoo 19 and later): https://www.odoo.com/documentation/19.0/developer/reference/external_api.html
 *   `POST /json/2/<model>/<method>`, `Authorization: bearer <key>`, `X-Odoo-Database`, the method's parameters as a
 *   JSON object; errors as 4xx/5xx with `{name, message, arguments, context, debug}` (401 `Invalid apikey`).
 *   `GET /web/version` answers `{version_info, version}` from 19.
 * - JSON-RPC (to 21; deprecated from 19, removed in 22):
 *   https://www.odoo.com/documentation/17.0/developer/reference/external_api.html ("Calling methods",
 *   `common.version`, `common.authenticate`, `object.execute_kw`); an error is HTTP 200 with
 *   `{error: {code: 200, message: "Odoo Server Error", data: {name, message, arguments, debug}}}`.
 * - ORM conventions (https://www.odoo.com/documentation/17.0/developer/reference/backend/orm.html, "Search domains",
 *   "Fields"): prefix-notation domains (`&`, `|`, `!`; terms side by side are and-ed); empty fields are `false`;
 *   many2one values `[id, display_name]`; datetimes naive UTC `YYYY-MM-DD HH:MM:SS`; records of a model with `active`
 *   are hidden when archived unless the domain names `active`; an unknown field is a ValueError.
 *
 * Every call is recorded (its transport, model, method, domain, limit...) so a test can assert what was read and
 * that nothing was written. Faults are queued and taken by the next request they match.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../../src/http-server.js';

export type Row = Record<string, unknown>;
export type Model = 'res.company' | 'res.partner' | 'account.move' | 'account.payment';

/** The fields each model has here (a database's real ones are many more; these are what the docs name for them). */
export const FIELDS: Record<Model, readonly string[]> = {
  'res.company': ['id', 'name', 'write_date'],
  'res.partner': ['id', 'name', 'display_name', 'is_company', 'parent_id', 'commercial_partner_id', 'type', 'active', 'email', 'phone', 'vat', 'street', 'street2', 'city', 'zip', 'country_id', 'customer_rank', 'supplier_rank', 'company_id', 'write_date'],
  'account.move': ['id', 'name', 'move_type', 'state', 'partner_id', 'commercial_partner_id', 'invoice_date', 'invoice_date_due', 'amount_total', 'amount_residual', 'currency_id', 'ref', 'payment_state', 'company_id', 'write_date'],
  'account.payment': ['id', 'name', 'amount', 'date', 'state', 'payment_type', 'partner_type', 'partner_id', 'reconciled_invoice_ids', 'company_id', 'write_date'],
};

export type Fault = 'accessDenied' | 'authenticateFalse' | 'invalidApikey' | 'valueError' | 502 | 503 | 504 | 'reset';

export interface Call {
  transport: 'json2' | 'jsonrpc' | 'web';
  service?: string;
  model?: string;
  method: string;
  domain?: unknown[];
  fields?: string[];
  limit?: number;
  offset?: number;
  order?: string;
  context?: Record<string, unknown>;
  /** What answered: 200, an Odoo error's name, a fault. */
  outcome: string;
}

export interface FakeOdooOptions {
  /** The major version the server says it runs: JSON-2 from 19, JSON-RPC below 22. */
  version: number;
  database?: string;
  login?: string;
  uid?: number;
  apiKey?: string;
}

class OdooException extends Error {
  constructor(
    readonly odooName: string,
    message: string,
    readonly status = 500,
  ) {
    super(message);
  }
}

const accessDenied = (): OdooException => new OdooException('odoo.exceptions.AccessDenied', 'Access Denied', 401);

/** A naive UTC datetime, as the ORM writes one. */
export function odooStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export class FakeOdoo {
  readonly data: Record<Model, Row[]> = { 'res.company': [], 'res.partner': [], 'account.move': [], 'account.payment': [] };
  readonly calls: Call[] = [];
  /** Every HTTP request: `METHOD path -> status` (a reset is `reset`). */
  readonly requests: string[] = [];
  readonly faults: { fault: Fault; on?: (c: { transport: string; method: string }) => boolean }[] = [];
  /** Valid API keys of the bot user (a rotation adds the new one, then removes the old). */
  readonly apiKeys = new Set<string>();
  version: number;
  readonly database: string;
  readonly login: string;
  readonly uid: number;
  url = '';

  private constructor(
    private readonly server: Server,
    o: FakeOdooOptions,
  ) {
    this.version = o.version;
    this.database = o.database ?? 'acme';
    this.login = o.login ?? 'collections-bot';
    this.uid = o.uid ?? 7;
    this.apiKeys.add(o.apiKey ?? 'bot-key-1');
  }

  static async start(o: FakeOdooOptions): Promise<FakeOdoo> {
    const holder: { fake?: FakeOdoo } = {};
    const server = createServer((req, res) => void holder.fake!.handle(req, res));
    const fake = (holder.fake = new FakeOdoo(server, o));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return fake;
  }

  async close(): Promise<void> {
    await closeServer(this.server);
  }

  /** Queues a fault for the next request it matches (all requests when `on` is absent). */
  fail(fault: Fault, times = 1, on?: (c: { transport: string; method: string }) => boolean): void {
    for (let i = 0; i < times; i += 1) this.faults.push(on ? { fault, on } : { fault });
  }

  /** Reading and writing calls made on models (never service calls). */
  modelCalls(): Call[] {
    return this.calls.filter((c) => c.model !== undefined);
  }

  private takeFault(transport: string, method: string): Fault | undefined {
    const i = this.faults.findIndex((f) => f.on === undefined || f.on({ transport, method }));
    return i < 0 ? undefined : this.faults.splice(i, 1)[0]!.fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, body: unknown, type = 'application/json; charset=utf-8'): void => {
      this.requests.push(`${req.method} ${url.pathname} -> ${status}`);
      res.writeHead(status, { 'content-type': type }).end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const json2 = /^\/json\/2\/([\w.]+)\/(\w+)$/.exec(url.pathname);
    const transport = url.pathname === '/jsonrpc' ? 'jsonrpc' : json2 ? 'json2' : 'web';
    let body: Record<string, unknown> = {};
    try {
      body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      send(400, '<html><body>Bad Request</body></html>', 'text/html');
      return;
    }
    const params = (body['params'] ?? {}) as { service?: string; method?: string; args?: unknown[] };
    const method = transport === 'json2' ? json2![2]! : transport === 'jsonrpc' ? `${params.service ?? ''}.${params.method ?? ''}` : url.pathname;
    const fault = this.takeFault(transport, method);
    if (fault === 'reset') {
      this.requests.push(`${req.method} ${url.pathname} -> reset`);
      req.socket.destroy();
      return;
    }
    if (fault === 502 || fault === 503 || fault === 504) {
      // The proxy in front of Odoo (nginx on Odoo.sh and most installs) answers so while Odoo restarts: HTML, not Odoo's JSON.
      send(fault, `<html><head><title>${fault}</title></head><body><center><h1>${fault} ${fault === 502 ? 'Bad Gateway' : fault === 503 ? 'Service Temporarily Unavailable' : 'Gateway Time-out'}</h1></center><hr><center>nginx</center></body></html>`, 'text/html');
      return;
    }
    if (transport === 'web' && req.method === 'GET' && url.pathname === '/web/version' && this.version >= 19) {
      this.calls.push({ transport: 'web', method: 'version', outcome: '200' });
      send(200, { version_info: [this.version, 0, 0, 'final', 0, ''], version: `${this.version}.0` });
      return;
    }
    if (transport === 'jsonrpc' && req.method === 'POST' && this.version < 22) {
      const answer = (result: unknown): void => send(200, { jsonrpc: '2.0', id: body['id'] ?? null, result });
      const error = (e: OdooException): void =>
        send(200, { jsonrpc: '2.0', id: body['id'] ?? null, error: { code: 200, message: 'Odoo Server Error', data: { name: e.odooName, message: e.message, arguments: [e.message], context: {}, debug: `Traceback (most recent call last):\n${e.odooName}: ${e.message}\n` } } });
      try {
        answer(this.jsonRpc(params, fault));
      } catch (e) {
        if (e instanceof OdooException) error(e);
        else throw e;
      }
      return;
    }
    if (transport === 'json2' && req.method === 'POST' && this.version >= 19) {
      const error = (e: OdooException): void => send(e.status, { name: e.odooName, message: e.message, arguments: [e.message, e.status], context: {}, debug: `Traceback (most recent call last):\n${e.odooName}: ${e.message}\n` });
      try {
        const key = /^bearer (\S+)$/i.exec(String(req.headers['authorization'] ?? ''))?.[1];
        if (fault === 'invalidApikey' || key === undefined || !this.apiKeys.has(key)) throw new OdooException('werkzeug.exceptions.Unauthorized', 'Invalid apikey', 401);
        const db = req.headers['x-odoo-database'];
        if (db !== undefined && db !== this.database) throw new OdooException('werkzeug.exceptions.NotFound', 'Not Found', 404);
        if (fault === 'accessDenied') throw accessDenied();
        send(200, this.execute('json2', json2![1]!, json2![2]!, body, fault));
      } catch (e) {
        if (e instanceof OdooException) error(e);
        else throw e;
      }
      return;
    }
    send(404, '<!doctype html><title>404 Not Found</title><h1>Not Found</h1>', 'text/html');
  }

  private jsonRpc(params: { service?: string; method?: string; args?: unknown[] }, fault: Fault | undefined): unknown {
    const args = params.args ?? [];
    if (params.service === 'common' && params.method === 'version') {
      this.calls.push({ transport: 'jsonrpc', service: 'common', method: 'version', outcome: '200' });
      return { server_version: `${this.version}.0`, server_version_info: [this.version, 0, 0, 'final', 0, ''], server_serie: `${this.version}.0`, protocol_version: 1 };
    }
    if (params.service === 'common' && params.method === 'authenticate') {
      const [db, login, key] = args as [string, string, string];
      this.checkDatabase(db);
      const ok = fault !== 'authenticateFalse' && fault !== 'accessDenied' && login === this.login && this.apiKeys.has(key);
      this.calls.push({ transport: 'jsonrpc', service: 'common', method: 'authenticate', outcome: ok ? '200' : 'false' });
      return ok ? this.uid : false;
    }
    if (params.service === 'object' && params.method === 'execute_kw') {
      const [db, uid, key, model, method, margs, kwargs] = args as [string, number, string, string, string, unknown[], Record<string, unknown> | undefined];
      this.checkDatabase(db);
      if (fault === 'accessDenied' || uid !== this.uid || !this.apiKeys.has(key)) {
        this.calls.push({ transport: 'jsonrpc', model, method, outcome: 'odoo.exceptions.AccessDenied' });
        throw accessDenied();
      }
      const named: Record<string, unknown> = { ...kwargs };
      if (method === 'read') named['ids'] = margs?.[0];
      else named['domain'] = margs?.[0];
      return this.execute('jsonrpc', model, method, named, fault);
    }
    throw new OdooException('builtins.Exception', `no such service method ${params.service ?? ''}.${params.method ?? ''}`);
  }

  private checkDatabase(db: string): void {
    if (db !== this.database) throw new OdooException('psycopg2.OperationalError', `connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed: FATAL:  database "${db}" does not exist\n`);
  }

  /** A model's method with named parameters (JSON-2's body; JSON-RPC's args and kwargs put so). */
  private execute(transport: 'json2' | 'jsonrpc', model: string, method: string, p: Record<string, unknown>, fault: Fault | undefined): unknown {
    const call: Call = { transport, model, method, outcome: '200' };
    for (const k of ['domain', 'fields', 'limit', 'offset', 'order', 'context'] as const) if (p[k] !== undefined) (call as unknown as Record<string, unknown>)[k] = p[k];
    this.calls.push(call);
    const fail = (e: OdooException): never => {
      call.outcome = e.odooName;
      throw e;
    };
    if (fault === 'valueError') fail(new OdooException('builtins.ValueError', `Invalid field 'x_studio_region' on model '${model}'`));
    if (!(model in FIELDS)) fail(new OdooException('builtins.KeyError', model));
    const fields = FIELDS[model as Model];
    if (!['search_read', 'search_count', 'read', 'search'].includes(method)) fail(new OdooException('odoo.exceptions.AccessError', `the double serves reading methods only, not ${method}`, 403));
    const wanted = (p['fields'] as string[] | undefined) ?? [...fields];
    for (const f of wanted) if (!fields.includes(f)) fail(new OdooException('builtins.ValueError', `Invalid field '${f}' on model '${model}'`));
    const rows = this.data[model as Model];
    const pick = (r: Row): Row => Object.fromEntries(['id', ...wanted.filter((f) => f !== 'id')].map((f) => [f, r[f] ?? false]));
    if (method === 'read') {
      const ids = (p['ids'] as number[] | undefined) ?? [];
      return rows.filter((r) => ids.includes(r['id'] as number)).map(pick);
    }
    const domain = (p['domain'] as unknown[] | undefined) ?? [];
    let matched: Row[];
    try {
      matched = rows.filter(matcher(domain, fields.includes('active')));
    } catch (e) {
      return fail(new OdooException('builtins.ValueError', e instanceof Error ? e.message : String(e)));
    }
    if (method === 'search_count') return matched.length;
    matched = sortBy(matched, (p['order'] as string | undefined) ?? 'id');
    const offset = (p['offset'] as number | undefined) ?? 0;
    const limit = p['limit'] as number | undefined;
    matched = matched.slice(offset, limit === undefined ? undefined : offset + limit);
    return method === 'search' ? matched.map((r) => r['id']) : matched.map(pick);
  }
}

type Pred = (r: Row) => boolean;

/** A domain's predicate: prefix notation, terms side by side and-ed, archived rows hidden unless `active` is named. */
export function matcher(domain: readonly unknown[], hasActive: boolean): Pred {
  let i = 0;
  const names = new Set<string>();
  const expr = (): Pred => {
    const t = domain[i++];
    if (t === '&' || t === '|') {
      const a = expr();
      const b = expr();
      return t === '&' ? (r) => a(r) && b(r) : (r) => a(r) || b(r);
    }
    if (t === '!') {
      const a = expr();
      return (r) => !a(r);
    }
    if (!Array.isArray(t) || t.length !== 3 || typeof t[0] !== 'string') throw new Error(`Invalid leaf ${JSON.stringify(t)}`);
    const [field, op, value] = t as [string, string, unknown];
    names.add(field);
    return (r) => compare(plain(r[field] ?? false), op, value);
  };
  const preds: Pred[] = [];
  while (i < domain.length) preds.push(expr());
  if (hasActive && !names.has('active')) preds.push((r) => r['active'] !== false);
  return (r) => preds.every((p) => p(r));
}

/** A many2one compares by its id. */
function plain(v: unknown): unknown {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && typeof v[1] === 'string' ? v[0] : v;
}

function compare(v: unknown, op: string, value: unknown): boolean {
  const list = Array.isArray(v) ? v : undefined;
  switch (op) {
    case '=':
      return list ? list.includes(value) : v === value;
    case '!=':
      return v !== value;
    case 'in':
      return (value as unknown[]).some((x) => (list ? list.includes(x) : v === x));
    case 'not in':
      return !(value as unknown[]).includes(v);
    case '>':
      return v !== false && (v as string | number) > (value as string | number);
    case '>=':
      return v !== false && (v as string | number) >= (value as string | number);
    case '<':
      return v !== false && (v as string | number) < (value as string | number);
    case '<=':
      return v !== false && (v as string | number) <= (value as string | number);
    default:
      throw new Error(`Invalid operator ${JSON.stringify(op)}`);
  }
}

function sortBy(rows: Row[], order: string): Row[] {
  const keys = order.split(',').map((part) => {
    const [field, dir] = part.trim().split(/\s+/);
    if (field === undefined || !/^\w+$/.test(field)) throw new OdooException('builtins.ValueError', `Invalid "order" specified (${order})`);
    return { field, desc: dir?.toLowerCase() === 'desc' };
  });
  return [...rows].sort((a, b) => {
    for (const k of keys) {
      const x = plain(a[k.field]) as string | number;
      const y = plain(b[k.field]) as string | number;
      if (x !== y) return (x < y ? -1 : 1) * (k.desc ? -1 : 1);
    }
    return 0;
  });
}
