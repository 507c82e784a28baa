/**
 * The project's own Zoho double (node:http on 127.0.0.1, port 0), written from Zoho's published OAuth and Books API v3
 * documentation (test/fixtures/zoho-books/README.md names the pages). One server stands for every data centre:
 * `/dc/<dc>` is that data centre's accounts server (`/oauth/v2/auth`, `/oauth/v2/token`, `/oauth/v2/token/revoke`) and
 * `/dc/<dc>/api` its API domain (`/books/v3/...`), so data centres are told apart by path on one origin (the
 * tenants file's `accountsUrl` override trusts that origin, as it would a proxy).
 *
 * - Consent at any data centre's `/oauth/v2/auth` (client, registered redirect URI, comma-separated ZohoBooks read
 *   scopes, `access_type=offline`) sends the browser back with `code`, `location` and `accounts-server` naming the
 *   user's data centre (`userDc`), or whatever `callbackServer` says (a foreign server, for the refusal test).
 * - The token endpoint takes client_id and client_secret in the form (or query), answers errors as HTTP 200
 *   `{"error": "invalid_code" | "invalid_client"}`, exchanges a code only at the data centre that issued it, never
 *   rotates refresh tokens, refuses an 11th refresh of one refresh token within 10 minutes (HTTP 400 "too many
 *   requests continuously"), and keeps 20 refresh tokens per user and app (a 21st ends the oldest).
 * - The API needs `Authorization: Zoho-oauthtoken <token>` of that data centre (else 401 code 57) and
 *   `organization_id` (else 400 code 2); lists page (`page`, `per_page` up to 200, `page_context.has_more_page`),
 *   sort by `last_modified_time` and filter `last_modified_time` (at or after, written `+hhmm`); contacts list only
 *   active ones unless `filter_by=Status.All`; a missing invoice is 404 code 1002; 100 calls a minute (429 code 45)
 *   and 10 in flight (429 code 1070) per organization. `fault()` queues one-off answers.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../../src/http-server.js';

export type ZohoObject = Record<string, unknown>;
type Collection = 'contacts' | 'invoices' | 'customerpayments';
const DETAIL_KEY: Record<Collection, string> = { contacts: 'contact', invoices: 'invoice', customerpayments: 'payment' };
const NOT_FOUND: Record<Collection, { code: number; message: string }> = {
  contacts: { code: 1002, message: 'Contact does not exist.' },
  invoices: { code: 1002, message: 'Invoice does not exist.' },
  customerpayments: { code: 1002, message: 'Payment does not exist.' },
};
const LOCATION: Record<string, string> = { com: 'us', eu: 'eu', in: 'in', 'com.au': 'au', jp: 'jp', ca: 'ca', sa: 'sa', uk: 'uk', 'com.cn': 'cn' };
const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{4}$/;

/** A stamp as Zoho Books writes it: local time at `offsetMin` east of UTC, offset without a colon (`+0300`). */
export function zohoStamp(ms: number, offsetMin = 180): string {
  const local = new Date(Math.floor(ms / 1000) * 1000 + offsetMin * 60_000).toISOString().slice(0, 19);
  const sign = offsetMin < 0 ? '-' : '+';
  const a = Math.abs(offsetMin);
  return `${local}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}${String(a % 60).padStart(2, '0')}`;
}

/** A Zoho stamp (`+hhmm` or `+hh:mm`) as epoch ms. */
export function stampMs(value: string): number {
  const t = Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  if (Number.isNaN(t)) throw new Error(`fake zoho: unreadable stamp ${value}`);
  return t;
}

export interface FakeZohoOptions {
  clientId: string;
  clientSecret: string;
  organizations: { organization_id: string; name: string }[];
  /** The data centre the consenting user lives in. Default `eu`. */
  userDc?: string;
  redirectUri?: string;
  accessTtlS?: number;
  perMinute?: number;
  concurrent?: number;
  apiDelayMs?: number;
}

export interface FakeFault {
  /** Applies to API paths starting with this (`/invoices`); all when absent. */
  path?: string;
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  times?: number;
}

interface Refresh {
  dc: string;
  revoked: boolean;
  uses: number[];
}

export class FakeZoho {
  readonly data: Record<Collection, ZohoObject[]> = { contacts: [], invoices: [], customerpayments: [] };
  readonly requests: { dc: string; path: string; query: Record<string, string>; authorization: string | undefined; status: number }[] = [];
  readonly tokenCalls: { dc: string; grant: string; outcome: string; clientSecretIn: 'form' | 'none' }[] = [];
  readonly revocations: { dc: string; outcome: string }[] = [];
  readonly consents: string[] = [];
  readonly issuedRefresh: string[] = [];
  readonly issuedAccess: string[] = [];
  baseUrl = '';
  /** Where the next consent says the user's accounts server is (a foreign one, for the refusal test). */
  callbackServer: string | undefined;
  maxInFlight = 0;
  private inFlight = 0;
  private readonly refresh = new Map<string, Refresh>();
  private readonly access = new Map<string, { dc: string; until: number }>();
  private readonly codes = new Map<string, { dc: string; used: boolean; redirectUri: string }>();
  private readonly faults: (FakeFault & { left: number })[] = [];
  private readonly minute: number[] = [];
  private server: Server | undefined;

  private constructor(readonly options: FakeZohoOptions) {}

  static async start(options: FakeZohoOptions): Promise<FakeZoho> {
    const fake = new FakeZoho(options);
    const server = createServer((req, res) => {
      fake.handle(req, res).catch((err: unknown) => send(res, 500, { code: 1000, message: String(err) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake.server = server;
    fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return fake;
  }

  /** A data centre's accounts server. */
  accounts(dc: string): string {
    return `${this.baseUrl}/dc/${dc}`;
  }

  apiDomain(dc: string): string {
    return `${this.baseUrl}/dc/${dc}/api`;
  }

  get organizationId(): string {
    return this.options.organizations[0]!.organization_id;
  }

  /** A refresh token issued at `dc`, as if the user had connected (the 21st of the user and app ends the oldest). */
  issueRefreshToken(dc = this.options.userDc ?? 'eu'): string {
    const token = `1000.${randomBytes(16).toString('hex')}.${randomBytes(16).toString('hex')}`;
    this.refresh.set(token, { dc, revoked: false, uses: [] });
    this.issuedRefresh.push(token);
    const live = this.issuedRefresh.filter((t) => this.refresh.get(t)?.revoked === false);
    if (live.length > 20) this.refresh.get(live[0]!)!.revoked = true;
    return token;
  }

  /** Every access token issued so far stops working (the next API call answers 401 code 57). */
  expireAccessTokens(): void {
    this.access.clear();
  }

  revokeAll(): void {
    for (const r of this.refresh.values()) r.revoked = true;
  }

  isRevoked(token: string): boolean {
    return this.refresh.get(token)?.revoked !== false;
  }

  fault(f: FakeFault): void {
    this.faults.push({ ...f, left: f.times ?? 1 });
  }

  async close(): Promise<void> {
    if (this.server) await closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const m = /^\/dc\/([a-z.]+)(\/.*)$/.exec(url.pathname);
    if (!m) return send(res, 404, { code: 5, message: 'Invalid URL' });
    const [, dc, rest] = m as unknown as [string, string, string];
    if (LOCATION[dc] === undefined) return send(res, 404, { code: 5, message: 'Invalid URL' });
    if (rest === '/oauth/v2/auth' && req.method === 'GET') return this.authorize(dc, url, res);
    if (rest === '/oauth/v2/token' && req.method === 'POST') return this.token(dc, req, url, res);
    if (rest === '/oauth/v2/token/revoke' && req.method === 'POST') return this.revoke(dc, url, res);
    const api = /^(?:\/api)?\/books\/v3(\/.*)$/.exec(rest);
    if (api && req.method === 'GET') return this.api(dc, api[1]!, url, req, res);
    send(res, 404, { code: 5, message: 'Invalid URL' });
  }

  private authorize(dc: string, url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    const o = this.options;
    if (q.get('client_id') !== o.clientId || (o.redirectUri !== undefined && q.get('redirect_uri') !== o.redirectUri)) return send(res, 400, { error: 'invalid_client' });
    const back = new URL(q.get('redirect_uri')!);
    const state = q.get('state');
    if (state !== null) back.searchParams.set('state', state);
    const scopes = (q.get('scope') ?? '').split(',');
    const fail = (error: string): void => {
      this.consents.push(error);
      back.searchParams.set('error', error);
      res.writeHead(302, { location: back.href }).end();
    };
    if (q.get('response_type') !== 'code') return fail('unsupported_response_type');
    if (scopes.some((s) => !/^ZohoBooks\.[a-z]+\.READ$/.test(s))) return fail('invalid_scope');
    if (q.get('access_type') !== 'offline') return fail('invalid_request');
    this.consents.push(`granted at ${dc}`);
    const userDc = o.userDc ?? 'eu';
    const code = `1000.${randomBytes(16).toString('hex')}`;
    this.codes.set(code, { dc: userDc, used: false, redirectUri: back.origin + back.pathname });
    back.searchParams.set('code', code);
    back.searchParams.set('location', LOCATION[userDc]!);
    back.searchParams.set('accounts-server', this.callbackServer ?? this.accounts(userDc));
    res.writeHead(302, { location: back.href }).end();
  }

  private async token(dc: string, req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    for (const [k, v] of url.searchParams) if (!form.has(k)) form.set(k, v);
    const grant = form.get('grant_type') ?? '';
    const record = (outcome: string): void => void this.tokenCalls.push({ dc, grant, outcome, clientSecretIn: form.has('client_secret') ? 'form' : 'none' });
    // Zoho answers its token errors with HTTP 200.
    if (form.get('client_id') !== this.options.clientId || form.get('client_secret') !== this.options.clientSecret) return record('invalid_client'), send(res, 200, { error: 'invalid_client' });
    if (grant === 'authorization_code') {
      const code = this.codes.get(form.get('code') ?? '');
      if (code === undefined || code.used || code.dc !== dc || form.get('redirect_uri') !== code.redirectUri) return record('invalid_code'), send(res, 200, { error: 'invalid_code' });
      code.used = true;
      const refreshToken = this.issueRefreshToken(dc);
      record('issued');
      return send(res, 200, { access_token: this.issueAccess(dc), refresh_token: refreshToken, api_domain: this.apiDomain(dc), token_type: 'Bearer', expires_in: this.options.accessTtlS ?? 3600 });
    }
    if (grant === 'refresh_token') {
      const token = form.get('refresh_token') ?? '';
      const r = this.refresh.get(token);
      if (r === undefined || r.revoked || r.dc !== dc) return record('invalid_code'), send(res, 200, { error: 'invalid_code' });
      const now = Date.now();
      r.uses = r.uses.filter((t) => now - t < 600_000);
      if (r.uses.length >= 10) {
        record('too_many');
        return send(res, 400, { error_description: 'You have made too many requests continuously. Please try again after some time.', error: 'Access Denied', status: 'failure' });
      }
      r.uses.push(now);
      record('issued');
      // Refresh tokens do not rotate: the answer has none.
      return send(res, 200, { access_token: this.issueAccess(dc), api_domain: this.apiDomain(dc), token_type: 'Bearer', expires_in: this.options.accessTtlS ?? 3600 });
    }
    record('unsupported_grant_type');
    send(res, 200, { error: 'unsupported_grant_type' });
  }

  private revoke(dc: string, url: URL, res: ServerResponse): void {
    const r = this.refresh.get(url.searchParams.get('token') ?? '');
    if (r === undefined || r.revoked || r.dc !== dc) {
      this.revocations.push({ dc, outcome: 'invalid' });
      return send(res, 400, { error: 'invalid_token' });
    }
    r.revoked = true;
    this.revocations.push({ dc, outcome: 'revoked' });
    send(res, 200, { status: 'success' });
  }

  private issueAccess(dc: string): string {
    const token = `1000.${randomBytes(16).toString('hex')}.${randomBytes(8).toString('hex')}`;
    this.access.set(token, { dc, until: Date.now() + (this.options.accessTtlS ?? 3600) * 1000 });
    this.issuedAccess.push(token);
    return token;
  }

  private async api(dc: string, path: string, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const query = Object.fromEntries(url.searchParams);
    const authorization = req.headers['authorization'];
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      this.requests.push({ dc, path, query, authorization, status });
      send(res, status, body, headers);
    };
    const token = /^Zoho-oauthtoken (\S+)$/.exec(authorization ?? '')?.[1];
    const a = token === undefined ? undefined : this.access.get(token);
    if (a === undefined || a.dc !== dc || a.until <= Date.now()) return answer(401, { code: 57, message: 'You are not authorized to perform this operation' });
    const fault = this.faults.find((f) => f.left > 0 && (f.path === undefined || path.startsWith(f.path)));
    if (fault) {
      fault.left -= 1;
      return answer(fault.status, fault.body, fault.headers);
    }
    if (path === '/organizations') return answer(200, { code: 0, message: 'success', organizations: this.options.organizations });
    if (query['organization_id'] === undefined || !this.options.organizations.some((o) => o.organization_id === query['organization_id'])) return answer(400, { code: 2, message: 'Invalid value passed for organization_id' });
    const now = Date.now();
    while (this.minute.length > 0 && now - this.minute[0]! >= 60_000) this.minute.shift();
    if (this.minute.length >= (this.options.perMinute ?? 100)) return answer(429, { code: 45, message: 'You have made too many requests per minute. Please try again after some time.' });
    if (this.inFlight >= (this.options.concurrent ?? 10)) return answer(429, { code: 1070, message: 'Concurrent API request limit exceeded for this organization.' });
    this.minute.push(now);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.options.apiDelayMs) await new Promise((r) => setTimeout(r, this.options.apiDelayMs));
      const m = /^\/(contacts|invoices|customerpayments)(?:\/([^/]+))?$/.exec(path);
      if (!m) return answer(404, { code: 5, message: 'Invalid URL' });
      const collection = m[1] as Collection;
      if (m[2] !== undefined) return this.detail(collection, decodeURIComponent(m[2]), answer);
      return this.list(collection, query, answer);
    } finally {
      this.inFlight -= 1;
    }
  }

  private detail(collection: Collection, id: string, answer: (status: number, body: unknown) => void): void {
    const idKey = collection === 'contacts' ? 'contact_id' : collection === 'invoices' ? 'invoice_id' : 'payment_id';
    const found = this.data[collection].find((o) => o[idKey] === id);
    if (found === undefined) return answer(404, NOT_FOUND[collection]);
    answer(200, { code: 0, message: 'success', [DETAIL_KEY[collection]]: found });
  }

  private list(collection: Collection, q: Record<string, string>, answer: (status: number, body: unknown) => void): void {
    const page = Number(q['page'] ?? '1');
    const perPage = Number(q['per_page'] ?? '200');
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(perPage) || perPage < 1 || perPage > 200) return answer(400, { code: 2, message: 'Invalid value passed for per_page' });
    let items = [...this.data[collection]];
    if (collection === 'contacts' && q['filter_by'] !== 'Status.All') items = items.filter((c) => c['status'] !== 'inactive');
    const since = q['last_modified_time'];
    if (since !== undefined) {
      if (!STAMP.test(since)) return answer(400, { code: 2, message: 'Invalid value passed for last_modified_time' });
      items = items.filter((o) => stampMs(String(o['last_modified_time'])) >= stampMs(since));
    }
    if (q['sort_column'] === 'last_modified_time') {
      items.sort((x, y) => stampMs(String(x['last_modified_time'])) - stampMs(String(y['last_modified_time'])));
      if (q['sort_order'] === 'D') items.reverse();
    }
    const slice = items.slice((page - 1) * perPage, page * perPage).map((o) => listItem(collection, o));
    answer(200, { code: 0, message: 'success', [collection]: slice, page_context: { page, per_page: perPage, has_more_page: page * perPage < items.length, sort_column: q['sort_column'] ?? 'created_time' } });
  }
}

/** What a listing shows of a record: contact persons and a payment's invoices are only in the detail. */
function listItem(collection: Collection, o: ZohoObject): ZohoObject {
  const { contact_persons: _p, invoices: _i, ...rest } = o;
  return collection === 'contacts' || collection === 'customerpayments' ? rest : o;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
