/**
 * A local fake of Xero (node:http on 127.0.0.1, port 0): the Accounting API's three listings and the OAuth token
 * endpoint, serving data built from the specification's example bodies.
 *
 * - Requests are checked against the specification's parameters (test/fixtures/xero/parameters.yaml): required
 *   headers, known query names, integer and boolean types, a date-time If-Modified-Since; plus what Xero needs
 *   beyond the spec (a Bearer token, `Accept: application/json`, pageSize <= 1000). A violation answers 400 and
 *   is listed in `violations`.
 * - Listings honour If-Modified-Since (UpdatedDateUTC >= it), `where=Type=="ACCREC"`, `includeArchived`,
 *   `IDs` (contacts), `order=UpdatedDateUTC ASC` (ties in insertion order), `page`/`pageSize`, with a pagination
 *   block.
 * - Limits like Xero's, configurable: per-minute (sliding) and per-day calls, with X-MinLimit-Remaining,
 *   X-DayLimit-Remaining, X-AppMinLimit-Remaining headers and 429 + Retry-After + X-Rate-Limit-Problem.
 *   `fault()` queues one-off answers (429s, 401, 5xx).
 * - Tokens rotate like Xero's: a refresh token works once; used again it works only within the grace window and
 *   only if its successor was never used (the successor is then revoked). Every use of every refresh token is
 *   counted.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuthPlatformDouble, type Organisation } from '../../doubles/oauth-platform.js';
import { TokenEndpointBook } from '../../doubles/token-endpoint.js';
import { specParameters, type ParameterSpec, type XeroObject } from './fixtures.js';
import { closeServer } from '../../../src/http-server.js';

export interface FakeXeroOptions {
  xeroTenantId: string;
  clientId: string;
  clientSecret: string;
  /** Access token lifetime (expires_in), seconds. Default 1800. */
  accessTtlS?: number;
  /** How long a used refresh token may be used again (if its successor was never used). Default 30 min. */
  graceMs?: number;
  /** Delay before the token endpoint answers (widens race windows). */
  tokenDelayMs?: number;
  /** Delay before an API listing answers (makes concurrency visible). */
  apiDelayMs?: number;
  perMinute?: number;
  perDay?: number;
  /** Retry-After of a spent daily limit; the day counter restarts after it. Default 3600. */
  dayRetryAfterS?: number;
}

export interface FakeFault {
  /** Applies to paths starting with this (e.g. `/Invoices`); all API paths when absent. */
  path?: string;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** How many calls it answers. Default 1. */
  times?: number;
  /** Let this many matching calls through first. Default 0. */
  after?: number;
}

export interface ApiRequest {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | undefined>;
  status: number;
  at: number;
}

export interface TokenCall {
  token: string;
  outcome: 'issued' | 'grace' | 'invalid_grant' | 'invalid_client';
  at: number;
}

type Collection = 'Contacts' | 'Invoices' | 'Payments';
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function xeroMs(value: unknown): number {
  const m = /^\/Date\((-?\d+)([+-]\d{4})?\)\/$/.exec(String(value));
  if (m) return Number(m[1]);
  const t = Date.parse(String(value));
  if (Number.isNaN(t)) throw new Error(`fake xero: unreadable date ${String(value)}`);
  return t;
}

export class FakeXero extends TokenEndpointBook<TokenCall['outcome']> {
  readonly data: Record<Collection, XeroObject[]> = { Contacts: [], Invoices: [], Payments: [] };
  readonly requests: ApiRequest[] = [];
  readonly violations: string[] = [];
  apiUrl = '';
  tokenUrl = '';
  /** The authorization side (connect links), once `enableConnect` was called. */
  oauth: OAuthPlatformDouble | undefined;
  authorizeUrl = '';
  connectionsUrl = '';
  /** Most API calls in flight at once. */
  maxInFlight = 0;
  private inFlight = 0;
  private readonly faults: (FakeFault & { left: number; skip: number })[] = [];
  private readonly minuteLog: number[] = [];
  private dayCount = 0;
  private dayBlockedUntil = 0;
  private readonly params = specParameters();
  private server: Server | undefined;

  private constructor(readonly options: FakeXeroOptions) {
    super(() => `rt-${randomBytes(16).toString('hex')}`);
  }

  static async start(options: FakeXeroOptions): Promise<FakeXero> {
    const fake = new FakeXero(options);
    const server = createServer((req, res) => {
      fake.handle(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake.server = server;
    fake.apiUrl = `http://127.0.0.1:${port}/api.xro/2.0`;
    fake.tokenUrl = `http://127.0.0.1:${port}/connect/token`;
    fake.authorizeUrl = `http://127.0.0.1:${port}/authorize`;
    fake.connectionsUrl = `http://127.0.0.1:${port}/connections`;
    return fake;
  }

  /** Serves the authorization code flow: consent grants `organisations`; `redirectUri` is the registered one. */
  enableConnect(o: { redirectUri: string; organisations: Organisation[]; allowedScopes?: readonly string[] }): OAuthPlatformDouble {
    this.oauth = new OAuthPlatformDouble({
      clientId: this.options.clientId,
      clientSecret: this.options.clientSecret,
      redirectUri: o.redirectUri,
      allowedScopes: o.allowedScopes ?? ['offline_access', 'accounting.contacts.read', 'accounting.invoices.read', 'accounting.payments.read', 'accounting.banktransactions.read'],
      pkce: 'required',
      organisations: o.organisations,
      issueGrant: () => this.issueGrant(this.options.accessTtlS ?? 1800),
      isAccessValid: (t) => this.isAccessValid(t),
      revokeAll: () => this.revokeAll(),
    });
    return this.oauth;
  }

  async close(): Promise<void> {
    if (this.server) await closeServer(this.server);
  }

  /** This refresh token stops working (as if Xero lost it). */
  revoke(token: string): void {
    const rec = this.refresh.get(token);
    if (rec) rec.revoked = true;
  }

  fault(f: FakeFault): void {
    this.faults.push({ ...f, left: f.times ?? 1, skip: f.after ?? 0 });
  }

  apiCalls(path?: string): ApiRequest[] {
    return this.requests.filter((r) => path === undefined || r.path === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    if (this.oauth && (await this.oauth.handle(req, res, url))) return;
    if (req.method === 'POST' && url.pathname === '/connect/token') return this.token(req, res);
    const m = /^\/api\.xro\/2\.0\/(Contacts|Invoices|Payments)$/.exec(url.pathname);
    if (req.method !== 'GET' || !m) return send(res, 404, { Title: 'Not Found' });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.options.apiDelayMs) await new Promise((r) => setTimeout(r, this.options.apiDelayMs));
      const collection = m[1] as Collection;
      const record: ApiRequest = {
        path: `/${collection}`,
        query: Object.fromEntries(url.searchParams),
        headers: { ...(req.headers as Record<string, string | undefined>) },
        status: 0,
        at: Date.now(),
      };
      this.requests.push(record);
      const { status, headers, body } = this.listing(collection, url.searchParams, req);
      record.status = status;
      send(res, status, body, { ...this.limitHeaders(), ...headers });
    } finally {
      this.inFlight -= 1;
    }
  }

  private limitHeaders(): Record<string, string> {
    const now = Date.now();
    while (this.minuteLog.length > 0 && this.minuteLog[0]! <= now - 60_000) this.minuteLog.shift();
    return {
      'x-minlimit-remaining': String(Math.max(0, (this.options.perMinute ?? 60) - this.minuteLog.length)),
      'x-daylimit-remaining': String(Math.max(0, (this.options.perDay ?? 5000) - this.dayCount)),
      'x-appminlimit-remaining': '9999',
    };
  }

  private listing(collection: Collection, q: URLSearchParams, req: IncomingMessage): { status: number; headers?: Record<string, string>; body: unknown } {
    const problems = this.check(`/${collection}`, q, req);
    if (problems.length > 0) {
      this.violations.push(...problems.map((p) => `GET /${collection}: ${p}`));
      return { status: 400, body: { Type: 'ValidationException', Message: problems.join('; ') } };
    }
    const auth = /^Bearer (.+)$/.exec(req.headers['authorization'] ?? '');
    const exp = auth ? this.access.get(auth[1]!) : undefined;
    if (exp === undefined || exp <= Date.now()) return { status: 401, body: { Title: 'Unauthorized', Status: 401, Detail: 'TokenExpired: token expired' } };
    if (req.headers['xero-tenant-id'] !== this.options.xeroTenantId) return { status: 403, body: { Title: 'Forbidden', Detail: 'AuthenticationUnsuccessful' } };

    const fault = this.faults.find((f) => f.left > 0 && (f.path === undefined || `/${collection}`.startsWith(f.path)) && (f.skip-- <= 0));
    if (fault) {
      fault.left -= 1;
      return { status: fault.status, headers: fault.headers ?? {}, body: fault.body ?? { Title: `fault ${fault.status}` } };
    }
    const now = Date.now();
    if (now < this.dayBlockedUntil) {
      return { status: 429, headers: { 'retry-after': String(Math.ceil((this.dayBlockedUntil - now) / 1000)), 'x-rate-limit-problem': 'day' }, body: {} };
    }
    if (this.dayBlockedUntil !== 0) {
      this.dayBlockedUntil = 0;
      this.dayCount = 0;
    }
    this.limitHeaders();
    if (this.minuteLog.length >= (this.options.perMinute ?? 60)) {
      const wait = Math.ceil((this.minuteLog[0]! + 60_000 - now) / 1000);
      return { status: 429, headers: { 'retry-after': String(wait), 'x-rate-limit-problem': 'minute' }, body: {} };
    }
    if (this.dayCount >= (this.options.perDay ?? 5000)) {
      const retry = this.options.dayRetryAfterS ?? 3600;
      this.dayBlockedUntil = now + retry * 1000;
      return { status: 429, headers: { 'retry-after': String(retry), 'x-rate-limit-problem': 'day' }, body: {} };
    }
    this.minuteLog.push(now);
    this.dayCount += 1;

    let items = this.data[collection].map((item, i) => ({ item, i, ms: xeroMs(item['UpdatedDateUTC']) }));
    const ims = req.headers['if-modified-since'];
    if (ims !== undefined) {
      const since = Date.parse(ims);
      items = items.filter((x) => x.ms >= since);
    }
    if (collection === 'Invoices' && q.get('where') === 'Type=="ACCREC"') items = items.filter((x) => x.item['Type'] === 'ACCREC');
    if (collection === 'Contacts' && q.get('includeArchived') !== 'true') items = items.filter((x) => x.item['ContactStatus'] !== 'ARCHIVED');
    const ids = q.get('IDs');
    if (collection === 'Contacts' && ids !== null) {
      const wanted = new Set(ids.split(','));
      items = items.filter((x) => wanted.has(String(x.item['ContactID'])));
    }
    if (q.get('order') === 'UpdatedDateUTC ASC') items.sort((a, b) => a.ms - b.ms || a.i - b.i);
    const page = Number(q.get('page') ?? '1');
    const pageSize = Number(q.get('pageSize') ?? '100');
    const slice = items.slice((page - 1) * pageSize, page * pageSize).map((x) => x.item);
    return {
      status: 200,
      body: {
        Id: randomBytes(16).toString('hex'),
        Status: 'OK',
        ProviderName: 'Fake Xero',
        DateTimeUTC: `/Date(${now})/`,
        pagination: { page, pageSize, pageCount: Math.ceil(items.length / pageSize), itemCount: items.length },
        [collection]: slice,
      },
    };
  }

  /** The request against the specification's parameters (and Xero's documented extras). */
  private check(path: string, q: URLSearchParams, req: IncomingMessage): string[] {
    const specs = this.params[path] ?? [];
    const problems: string[] = [];
    for (const spec of specs.filter((s) => s.in === 'header')) {
      const value = req.headers[spec.name.toLowerCase()];
      if (spec.required && (value === undefined || value === '')) problems.push(`missing required header ${spec.name}`);
      if (value !== undefined && spec.schema?.format === 'date-time' && !DATE_TIME.test(String(value))) problems.push(`${spec.name} is not a date-time: ${String(value)}`);
    }
    for (const [name, value] of q) {
      const spec = specs.find((s) => s.in === 'query' && s.name === name);
      if (!spec) {
        problems.push(`unknown query parameter ${name}`);
        continue;
      }
      if (!typeMatches(spec, value)) problems.push(`query ${name}=${value} is not of type ${spec.schema?.type ?? '?'}`);
    }
    if (!/^Bearer \S+$/.test(req.headers['authorization'] ?? '')) problems.push('missing Bearer authorization');
    if (!(req.headers['accept'] ?? '').includes('application/json')) problems.push('Accept is not application/json (Xero would answer XML)');
    const pageSize = q.get('pageSize');
    if (pageSize !== null && Number(pageSize) > 1000) problems.push('pageSize above 1000');
    const where = q.get('where');
    if (where !== null && !(path === '/Invoices' && where === 'Type=="ACCREC"')) problems.push(`where not supported by the fake: ${where}`);
    const order = q.get('order');
    if (order !== null && order !== 'UpdatedDateUTC ASC') problems.push(`order not supported by the fake: ${order}`);
    return problems;
  }

  private async token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    if (this.oauth && form.get('grant_type') === 'authorization_code') return this.oauth.exchange(req, res, form);
    if (this.options.tokenDelayMs) await new Promise((r) => setTimeout(r, this.options.tokenDelayMs));
    const token = form.get('refresh_token') ?? '';
    const now = Date.now();
    const expected = `Basic ${Buffer.from(`${this.options.clientId}:${this.options.clientSecret}`).toString('base64')}`;
    if (req.headers['authorization'] !== expected || form.get('grant_type') !== 'refresh_token') {
      this.tokenCalls.push({ token, outcome: 'invalid_client', at: now });
      return send(res, 400, { error: 'invalid_client' });
    }
    const rec = this.refresh.get(token);
    let outcome: TokenCall['outcome'] = 'invalid_grant';
    if (rec && !rec.revoked) {
      if (rec.usedAt === undefined) {
        rec.usedAt = now;
        outcome = 'issued';
      } else {
        const child = rec.child === undefined ? undefined : this.refresh.get(rec.child);
        if (now - rec.usedAt < (this.options.graceMs ?? 30 * 60_000) && child !== undefined && child.usedAt === undefined) {
          child.revoked = true;
          outcome = 'grace';
        }
      }
    }
    this.tokenCalls.push({ token, outcome, at: now });
    if (outcome === 'invalid_grant' || !rec) return send(res, 400, { error: 'invalid_grant' });
    const next = this.issueRefreshToken();
    rec.child = next;
    const accessToken = `at-${randomBytes(16).toString('hex')}`;
    const ttl = this.options.accessTtlS ?? 1800;
    this.issueAccess(accessToken, now, ttl);
    send(res, 200, { access_token: accessToken, refresh_token: next, expires_in: ttl, token_type: 'Bearer', scope: 'accounting.transactions.read accounting.contacts.read offline_access' });
  }
}

function typeMatches(spec: ParameterSpec, value: string): boolean {
  switch (spec.schema?.type) {
    case 'integer':
      return /^-?\d+$/.test(value);
    case 'boolean':
      return value === 'true' || value === 'false';
    default:
      return true;
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
