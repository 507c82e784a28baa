/**
 * A QuickBooks Online double (node:http on 127.0.0.1, port 0): the v3 Accounting API's query endpoint and change
 * feed for one company (realm), built from Intuit's schemas (test/fixtures/quickbooks) and the public API rules.
 *
 * - `GET /v3/company/<realm>/query?query=...&minorversion=NN` parses the statement with the grammar it supports:
 *   `select * from Customer|Invoice|Payment [where <cond> [and <cond>]...] [order by MetaData.LastUpdatedTime]
 *   [startposition N] [maxresults M]` (M <= 1000), a `<cond>` one of `MetaData.LastUpdatedTime >= '<iso>'`,
 *   `Active in (true, false)`, `Active = true|false`, `Id in ('<id>', ...)`, `Id = '<id>'`. Anything else is a
 *   400 ValidationFault (code 4000, QueryParserError). Customers are active ones only unless a condition names
 *   `Active` (as QuickBooks). Ties in LastUpdatedTime come in insertion order, not Id order.
 * - `GET /v3/company/<realm>/cdc?entities=A,B&changedSince=<iso>`: a CDCResponse of the entities changed since
 *   then, deleted ones as `{Id, status: "Deleted", MetaData}`; a `changedSince` older than 30 days is refused
 *   (ValidationFault). `phantomDeletes` are entities it calls Deleted though they were only updated (a reported
 *   behaviour).
 * - Answers are JSON (`Accept: application/json` required) with an `intuit_tid` header; a Bearer token from
 *   `tokens` (or `acceptToken`) is required, else a 401 in the gateway's lower-case `fault` shape.
 * - `fault()` queues one-off answers: Fault bodies (AuthenticationFault 401, ValidationFault 400, SystemFault 500)
 *   and 429s. Every entity served is checked against its schema type: a name the type lacks is a `violation`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { xsdEnum, xsdFields } from './xsd.js';
import { closeServer } from '../../../src/http-server.js';

export type QboEntityName = 'Customer' | 'Invoice' | 'Payment';
export type QboObject = Record<string, unknown>;
const ENTITIES: readonly QboEntityName[] = ['Customer', 'Invoice', 'Payment'];
const CDC_DAYS_MS = 30 * 86_400_000;

export interface QboDoubleOptions {
  realmId?: string;
  /** Access tokens accepted. Default one fixed token (`QBO_TEST_TOKEN`). */
  tokens?: string[];
  /** The minorversion the adapter must pin. Default '75'. */
  minorVersion?: string;
  /** The double's clock (the change feed's 30 days, default stamps). Default Date.now. */
  now?: () => number;
}

export const QBO_TEST_TOKEN = 'qbo-test-access-token';

export interface QboFaultSpec {
  /** `query` or `cdc`; both when absent. */
  path?: 'query' | 'cdc';
  /** Only statements matching this (query). */
  match?: RegExp;
  status: number;
  /** A Fault body of this type (FaultTypeEnum); a 429 has none. */
  type?: 'AuthenticationFault' | 'ValidationFault' | 'SystemFault';
  code?: string;
  message?: string;
  headers?: Record<string, string>;
  /** Calls it answers. Default 1; Infinity for all. */
  times?: number;
}

export interface QboRequest {
  path: string;
  statement?: string;
  query: Record<string, string>;
  status: number;
  tid: string;
}

interface Stored {
  obj: QboObject;
  seq: number;
}

interface Deletion {
  entity: QboEntityName;
  id: string;
  at: number;
}

/** `2026-03-01T00:00:00-08:00`: how QuickBooks writes stamps (Pacific offset, second precision). */
export function qboStamp(ms: number): string {
  const local = new Date(Math.floor(ms / 1000) * 1000 - 8 * 3_600_000).toISOString().slice(0, 19);
  return `${local}-08:00`;
}

class ParseError extends Error {}

interface Statement {
  entity: QboEntityName;
  since?: number;
  active?: boolean[];
  ids?: string[];
  ordered: boolean;
  start: number;
  max: number;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Parses one statement of the supported grammar; throws ParseError naming what it could not read. */
export function parseStatement(sql: string): Statement {
  const text = sql.trim().replace(/\s+/g, ' ');
  const m = /^select \* from (\w+)(?: where (.+?))?( order by MetaData\.LastUpdatedTime(?: asc)?)?(?: startposition (\d+))?(?: maxresults (\d+))?$/i.exec(text);
  if (!m) throw new ParseError(`unsupported statement: ${text.slice(0, 200)}`);
  const entity = ENTITIES.find((e) => e.toLowerCase() === m[1]!.toLowerCase());
  if (entity === undefined) throw new ParseError(`unsupported entity ${m[1]!}`);
  const st: Statement = { entity, ordered: m[3] !== undefined, start: m[4] === undefined ? 1 : Number(m[4]), max: m[5] === undefined ? 100 : Number(m[5]) };
  if (st.start < 1) throw new ParseError('startposition must be 1 or more');
  if (st.max < 1 || st.max > 1000) throw new ParseError('maxresults must be between 1 and 1000');
  // Conditions are split on `and` outside quotes and parentheses.
  const conds = m[2] === undefined ? [] : m[2].split(/ and (?=(?:[^']*'[^']*')*[^']*$)(?![^(]*\))/i);
  for (const cond of conds) {
    let c: RegExpExecArray | null;
    if ((c = /^MetaData\.LastUpdatedTime >= '([^']+)'$/i.exec(cond))) {
      if (!ISO.test(c[1]!)) throw new ParseError(`not a date-time: ${c[1]!}`);
      st.since = Date.parse(c[1]!);
    } else if ((c = /^Active in \((true|false)(?:, ?(true|false))?\)$/i.exec(cond))) {
      st.active = [c[1], c[2]].filter((v): v is string => v !== undefined).map((v) => v.toLowerCase() === 'true');
    } else if ((c = /^Active = (true|false)$/i.exec(cond))) {
      st.active = [c[1]!.toLowerCase() === 'true'];
    } else if ((c = /^Id in \(((?:'[^']*'(?:, ?)?)+)\)$/i.exec(cond))) {
      st.ids = [...c[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]!);
    } else if ((c = /^Id = '([^']*)'$/i.exec(cond))) {
      st.ids = [c[1]!];
    } else throw new ParseError(`unsupported condition: ${cond.slice(0, 120)}`);
  }
  return st;
}

export class QboDouble {
  readonly realmId: string;
  readonly requests: QboRequest[] = [];
  readonly violations: string[] = [];
  /** Entities the change feed calls Deleted though they still exist. */
  readonly phantomDeletes = new Set<string>();
  apiUrl = '';
  private readonly data = new Map<QboEntityName, Map<string, Stored>>(ENTITIES.map((e) => [e, new Map()]));
  private readonly deletions: Deletion[] = [];
  private readonly tokens: Set<string>;
  private readonly faults: (QboFaultSpec & { left: number })[] = [];
  private readonly poisoned = new Map<string, QboFaultSpec>();
  private readonly fields = new Map<QboEntityName, Set<string>>(ENTITIES.map((e) => [e, xsdFields(e)]));
  private readonly faultTypes = new Set(xsdEnum('FaultTypeEnum'));
  private seq = 0;
  private nextId = 1000;
  private server: Server | undefined;
  readonly now: () => number;

  private constructor(readonly options: QboDoubleOptions) {
    this.realmId = options.realmId ?? String(4_620_816_365_000_000 + Math.floor(Math.random() * 1e6));
    this.tokens = new Set(options.tokens ?? [QBO_TEST_TOKEN]);
    this.now = options.now ?? Date.now;
  }

  static async start(options: QboDoubleOptions = {}): Promise<QboDouble> {
    const double = new QboDouble(options);
    const server = createServer((req, res) => {
      double.handle(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    double.server = server;
    double.apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return double;
  }

  async close(): Promise<void> {
    if (this.server) await closeServer(this.server);
  }

  acceptToken(token: string): void {
    this.tokens.add(token);
  }

  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  fault(spec: QboFaultSpec): void {
    this.faults.push({ ...spec, left: spec.times ?? 1 });
  }

  /**
   * Makes one entity unservable: any query whose page would hold it answers `spec` (a reported behaviour: one
   * invoice referencing an inactive customer fails its whole page with SystemFault 10000).
   */
  poison(entity: QboEntityName, id: string, spec: QboFaultSpec): void {
    this.poisoned.set(`${entity}:${id}`, spec);
  }

  newId(): string {
    this.nextId += 1;
    return String(this.nextId);
  }

  // ---------- data ----------

  /** Adds or replaces an entity (its `Id` required), stamping MetaData.LastUpdatedTime with `at` (default now). */
  put(entity: QboEntityName, obj: QboObject, at = this.now()): QboObject {
    const id = obj['Id'];
    if (typeof id !== 'string') throw new Error('qbo double: an entity needs a string Id');
    const map = this.data.get(entity)!;
    const old = map.get(id);
    const meta = { CreateTime: (old?.obj['MetaData'] as QboObject | undefined)?.['CreateTime'] ?? qboStamp(at), LastUpdatedTime: qboStamp(at) };
    const stored = { ...obj, SyncToken: String(Number((old?.obj['SyncToken'] as string | undefined) ?? '-1') + 1), MetaData: meta };
    this.seq += 1;
    map.set(id, { obj: stored, seq: this.seq });
    return stored;
  }

  get(entity: QboEntityName, id: string): QboObject | undefined {
    return this.data.get(entity)!.get(id)?.obj;
  }

  all(entity: QboEntityName): QboObject[] {
    return [...this.data.get(entity)!.values()].map((s) => s.obj);
  }

  /** Changes some fields and stamps the entity. */
  update(entity: QboEntityName, id: string, fields: QboObject, at = this.now()): QboObject {
    const old = this.get(entity, id);
    if (!old) throw new Error(`qbo double: no ${entity} ${id}`);
    return this.put(entity, { ...old, ...fields }, at);
  }

  /** Deletes an entity: gone from queries, `Deleted` in the change feed. */
  remove(entity: QboEntityName, id: string, at = this.now()): void {
    if (!this.data.get(entity)!.delete(id)) throw new Error(`qbo double: no ${entity} ${id}`);
    this.deletions.push({ entity, id, at });
  }

  /** Voids an invoice as QuickBooks shows it: TotalAmt and Balance 0, "Voided" in the private note. */
  voidInvoice(id: string, at = this.now()): void {
    this.update('Invoice', id, { TotalAmt: 0, Balance: 0, PrivateNote: 'Voided', Line: [] }, at);
  }

  /**
   * Creates or edits a payment settling invoices (`lines`: invoice id -> amount): each invoice's Balance moves by
   * the difference and the invoice is stamped, as QuickBooks does. An edit first undoes the old lines.
   */
  pay(paymentId: string, customerId: string, lines: Record<string, number>, at = this.now(), txnDate = '2026-03-10'): QboObject {
    const old = this.get('Payment', paymentId);
    const moves = new Map<string, number>();
    for (const [inv, amount] of Object.entries(paymentLinesOf(old))) moves.set(inv, (moves.get(inv) ?? 0) + amount);
    for (const [inv, amount] of Object.entries(lines)) moves.set(inv, (moves.get(inv) ?? 0) - amount);
    for (const [inv, delta] of moves) if (delta !== 0) this.moveBalance(inv, delta, at);
    const total = Object.values(lines).reduce((a, b) => a + b, 0);
    return this.put(
      'Payment',
      {
        Id: paymentId,
        TxnDate: txnDate,
        TotalAmt: total,
        UnappliedAmt: 0,
        PaymentRefNum: `PMT-${paymentId}`,
        CustomerRef: { value: customerId },
        Line: Object.entries(lines).map(([inv, amount]) => ({ Amount: amount, LinkedTxn: [{ TxnId: inv, TxnType: 'Invoice' }] })),
      },
      at,
    );
  }

  /** Deletes a payment: its invoices' balances go back up (and they are stamped). */
  deletePayment(paymentId: string, at = this.now()): void {
    for (const [inv, amount] of Object.entries(paymentLinesOf(this.get('Payment', paymentId)))) this.moveBalance(inv, amount, at);
    this.remove('Payment', paymentId, at);
  }

  private moveBalance(invoiceId: string, delta: number, at: number): void {
    const inv = this.get('Invoice', invoiceId);
    if (!inv) return;
    const balance = Math.round(((inv['Balance'] as number) + delta) * 100) / 100;
    this.update('Invoice', invoiceId, { Balance: balance }, at);
  }

  // ---------- HTTP ----------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query = Object.fromEntries(url.searchParams.entries());
    const tid = `1-${randomBytes(8).toString('hex')}-${randomBytes(4).toString('hex')}`;
    const record = (status: number): void => {
      const entry: QboRequest = { path: url.pathname, query, status, tid };
      if (query['query'] !== undefined) entry.statement = query['query'];
      this.requests.push(entry);
    };
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      record(status);
      res.writeHead(status, { 'content-type': 'application/json', intuit_tid: tid, ...headers });
      res.end(JSON.stringify(body));
    };
    const fault = (status: number, type: string, code: string, message: string, detail?: string): void => {
      if (!this.faultTypes.has(type)) this.violations.push(`fault type ${type} is not in FaultTypeEnum`);
      send(status, { Fault: { Error: [{ Message: message, Detail: detail ?? message, code }], type }, time: new Date(this.now()).toISOString() });
    };

    const m = /^\/v3\/company\/([^/]+)\/(query|cdc)$/.exec(url.pathname);
    if (req.method !== 'GET' || !m) return fault(400, 'ValidationFault', '4001', 'Invalid request', `${req.method ?? ''} ${url.pathname} is not served`);
    const auth = req.headers.authorization ?? '';
    const token = /^Bearer (.+)$/.exec(auth)?.[1];
    if (token === undefined || !this.tokens.has(token)) {
      return send(401, { fault: { error: [{ message: 'message=AuthenticationFailed; errorCode=003200; statusCode=401', detail: 'Token expired or invalid', code: '3200' }], type: 'AUTHENTICATION' }, time: new Date(this.now()).toISOString() });
    }
    if (m[1] !== this.realmId) return fault(403, 'AuthorizationFault', '3100', 'ApplicationAuthorizationFailed', `no access to company ${m[1]!}`);
    if (!(req.headers.accept ?? '').includes('application/json')) this.violations.push(`${url.pathname} without Accept: application/json`);
    const minor = this.options.minorVersion ?? '75';
    if (query['minorversion'] !== minor) return fault(400, 'ValidationFault', '2010', 'Invalid minorversion', `minorversion ${query['minorversion'] ?? '(none)'}; this double serves ${minor}`);
    const path = m[2] as 'query' | 'cdc';

    const injected = this.faults.find((f) => f.left > 0 && (f.path === undefined || f.path === path) && (f.match === undefined || f.match.test(query['query'] ?? '')));
    if (injected) {
      injected.left -= 1;
      if (injected.type === undefined) return send(injected.status, { message: 'ThrottleExceeded' }, injected.headers);
      return fault(injected.status, injected.type, injected.code ?? (injected.type === 'SystemFault' ? '10000' : injected.type === 'ValidationFault' ? '2020' : '3200'), injected.message ?? injected.type, injected.message);
    }

    if (path === 'query') {
      let st: Statement;
      try {
        st = parseStatement(query['query'] ?? '');
      } catch (err) {
        if (!(err instanceof ParseError)) throw err;
        return fault(400, 'ValidationFault', '4000', 'Error parsing query', `QueryParserError: ${err.message}`);
      }
      const list = this.select(st);
      const page = list.slice(st.start - 1, st.start - 1 + st.max);
      const poison = page.map((o) => this.poisoned.get(`${st.entity}:${String(o['Id'])}`)).find((p) => p !== undefined);
      if (poison) return fault(poison.status, poison.type ?? 'SystemFault', poison.code ?? '10000', poison.message ?? 'Something you\'re trying to use has been made inactive');
      this.check(st.entity, page);
      const qr: QboObject = page.length === 0 ? {} : { [st.entity]: page, startPosition: st.start, maxResults: page.length };
      return send(200, { QueryResponse: qr, time: new Date(this.now()).toISOString() });
    }

    const changedSince = query['changedSince'] ?? '';
    const entities = (query['entities'] ?? '').split(',').map((e) => e.trim());
    const known = entities.map((e) => ENTITIES.find((x) => x.toLowerCase() === e.toLowerCase()));
    if (!ISO.test(changedSince)) return fault(400, 'ValidationFault', '2020', 'Required param missing, need to supply the required value for the API', 'changedSince: a date-time is required');
    if (entities.length === 0 || known.some((e) => e === undefined)) return fault(400, 'ValidationFault', '2020', 'Invalid entities', `entities: ${query['entities'] ?? ''}`);
    const since = Date.parse(changedSince);
    if (since < this.now() - CDC_DAYS_MS) return fault(400, 'ValidationFault', '2020', 'Invalid changedSince', 'changedSince cannot be older than 30 days');
    const responses = (known as QboEntityName[]).map((entity) => {
      const changed = [...this.data.get(entity)!.values()]
        .filter((s) => Date.parse(String((s.obj['MetaData'] as QboObject)['LastUpdatedTime'])) >= since)
        .map((s) => (this.phantomDeletes.has(`${entity}:${String(s.obj['Id'])}`) ? { Id: s.obj['Id'], status: 'Deleted', MetaData: s.obj['MetaData'] } : s.obj));
      const gone = this.deletions
        .filter((d) => d.entity === entity && d.at >= since)
        .map((d) => ({ Id: d.id, status: 'Deleted', MetaData: { LastUpdatedTime: qboStamp(d.at) } }));
      const items = [...changed, ...gone].slice(0, 1000);
      return { [entity]: items, startPosition: 1, maxResults: items.length };
    });
    return send(200, { CDCResponse: [{ QueryResponse: responses }], time: new Date(this.now()).toISOString() });
  }

  private select(st: Statement): QboObject[] {
    let rows = [...this.data.get(st.entity)!.values()];
    if (st.entity === 'Customer') {
      const active = st.active ?? [true];
      rows = rows.filter((s) => active.includes(s.obj['Active'] !== false));
    }
    if (st.ids !== undefined) {
      const ids = new Set(st.ids);
      rows = rows.filter((s) => ids.has(String(s.obj['Id'])));
    }
    const stampOf = (s: Stored): number => Date.parse(String((s.obj['MetaData'] as QboObject)['LastUpdatedTime']));
    if (st.since !== undefined) rows = rows.filter((s) => stampOf(s) >= st.since!);
    rows.sort((a, b) => (st.ordered ? stampOf(a) - stampOf(b) : 0) || a.seq - b.seq);
    return rows.map((s) => s.obj);
  }

  /** Every name an entity carries must be one its schema type declares. */
  private check(entity: QboEntityName, page: readonly QboObject[]): void {
    const allowed = this.fields.get(entity)!;
    for (const obj of page) {
      for (const key of Object.keys(obj)) if (!allowed.has(key)) this.violations.push(`${entity} ${String(obj['Id'])}: ${key} is not an element of ${entity} in the schema`);
    }
  }
}

function paymentLinesOf(payment: QboObject | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (payment?.['Line'] as QboObject[] | undefined) ?? []) {
    for (const t of (line['LinkedTxn'] as QboObject[] | undefined) ?? []) {
      if (t['TxnType'] === 'Invoice') out[String(t['TxnId'])] = (out[String(t['TxnId'])] ?? 0) + (line['Amount'] as number);
    }
  }
  return out;
}
