/**
 * The `quickbooks` adapter: customers, invoices and payments of one QuickBooks Online company (realm).
 *
 * Reading: `GET /v3/company/<realm>/query` with `select * from <Entity> [where MetaData.LastUpdatedTime >= '<since>']
 * order by MetaData.LastUpdatedTime startposition P maxresults N` (N up to 1000), customers with
 * `Active in (true, false)` (QuickBooks leaves inactive ones out otherwise), the `minorversion` pinned.
 * Paging is keyset where it can be (as the Xero adapter): after a full page whose last stamp moved forward, the
 * next page asks again from that stamp (startposition 1) and skips the ids at it already yielded; offset paging
 * under a moving sort would skip a record updated mid-listing. A page that all shares one stamp steps by offset.
 * Ties are in no id order, so pages are not `ordered`: the engine moves the cursor when the listing ends.
 *
 * Deletions come first in an incremental listing: the change feed (`cdc`, the last 30 days) names deleted
 * entities; each is read again by Id (the feed has called updated entities deleted) and only those truly gone are
 * yielded as deleted, from what the adapter remembers of them (memory.ts). A listing from further back than the
 * feed keeps (or a full one) checks every remembered id by Id instead. A page that fails with a ValidationFault
 * (or the SystemFault 10000 one bad record causes) is narrowed down by halving MAXRESULTS until the one record that
 * fails is set aside as a bad record and the listing goes on.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Agent, type Dispatcher } from 'undici';
import type { Entity } from '../../glossary.js';
import type { RecordOf } from '../records.js';
import { PlatformError, type BadRecord, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import type { QuickBooksAccess } from './access.js';
import { QuickBooksFaultError, QuickBooksHttp, type QuickBooksHttpSettings } from './http.js';
import { mapQboItem, paymentRecord, placeOf, qboMs, type ItemPosition, type PaymentLines } from './mapping.js';
import { QuickBooksMemory, type Seen } from './memory.js';
import { decodeQboToken, encodeQboToken, type QboPosition } from './page-token.js';
import { parseCdcResponse, parseQueryResponse, qboCdcItemSchema, QBO_ENTITY, type QboEntity } from './schemas.js';
import { checkRecord } from '../records.js';

export interface QuickBooksAdapterOptions {
  /** Redis for what the adapter remembers of yielded records (the app's connection; not closed here). */
  redis: Redis;
  /** KEY_PREFIX. */
  prefix: string;
  realmId: string;
  /** `https://quickbooks.api.intuit.com`, the sandbox's, or a double's. */
  apiUrl: string;
  /** Tokens and leases (src/platforms/quickbooks/access.ts), or how to build them on the adapter's HTTP agent. */
  access: QuickBooksAccess | ((dispatcher: Dispatcher) => QuickBooksAccess);
  logger?: Logger;
  http?: Partial<QuickBooksHttpSettings>;
  /** The change feed's reach. Default 30 days (Intuit's). */
  cdcWindowMs?: number;
  now?: () => number;
}

export const DEFAULT_QBO_PAGE_SIZE = 100;
export const MAX_QBO_PAGE_SIZE = 1000;
export const CDC_WINDOW_MS = 30 * 86_400_000;
/** The change feed answers at most this many entities of a kind, unpaged: a full answer narrows the window. */
const CDC_MAX = 1000;
/** Ids asked for in one `where Id in (...)` statement. */
const IDS_PER_QUERY = 100;
const MAX_TIED_IDS = 50;
/** A SystemFault one bad record causes (Intuit's code 10000: "made inactive"): narrowed like a ValidationFault. */
const RECORD_SYSTEM_CODES = new Set(['10000']);
/** A statement QuickBooks cannot parse (code 4000, QueryParserError) is our bug, never a record's. */
const PARSER_CODES = new Set(['4000']);

/** `2026-03-01T08:00:00+00:00`: the stamp QuickBooks compares against, second precision, rounded down. */
export function qboInstant(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}+00:00`;
}

/** The query statement of one page (the grammar the double accepts is exactly what this builds). */
export function queryStatement(entity: QboEntity, opts: { since?: number; ids?: readonly string[]; start?: number; max?: number }): string {
  const where: string[] = [];
  if (entity === 'Customer') where.push('Active in (true, false)');
  if (opts.ids !== undefined) where.push(`Id in (${opts.ids.map((id) => `'${id.replace(/'/g, "\\'")}'`).join(', ')})`);
  if (opts.since !== undefined) where.push(`MetaData.LastUpdatedTime >= '${qboInstant(opts.since)}'`);
  let sql = `select * from ${entity}`;
  if (where.length > 0) sql += ` where ${where.join(' and ')}`;
  if (opts.ids === undefined) sql += ' order by MetaData.LastUpdatedTime';
  if (opts.start !== undefined) sql += ` startposition ${opts.start}`;
  if (opts.max !== undefined) sql += ` maxresults ${opts.max}`;
  return sql;
}

export class QuickBooksAdapter implements PlatformAdapter {
  readonly kind = 'quickbooks';
  readonly memory: QuickBooksMemory;
  readonly access: QuickBooksAccess;
  private readonly http: QuickBooksHttp;
  private readonly agent: Agent;
  private readonly logger: Logger | undefined;
  private readonly now: () => number;

  constructor(private readonly options: QuickBooksAdapterOptions) {
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 10, connect: { timeout: 5_000 } });
    this.memory = new QuickBooksMemory(options.redis, options.prefix, options.realmId);
    this.access = typeof options.access === 'function' ? options.access(this.agent) : options.access;
    this.http = new QuickBooksHttp({
      apiUrl: options.apiUrl,
      realmId: options.realmId,
      access: this.access,
      dispatcher: this.agent,
      ...(options.http ? { settings: options.http } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const pageSize = Math.min(Math.max(1, Math.floor(req.pageSize ?? DEFAULT_QBO_PAGE_SIZE)), MAX_QBO_PAGE_SIZE);
    let pos: QboPosition;
    if (req.pageToken !== undefined) pos = decodeQboToken(req.pageToken);
    else {
      const sinceMs = req.since ? Date.parse(req.since.updatedAt) : undefined;
      if (sinceMs !== undefined && Number.isNaN(sinceMs)) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'quickbooks adapter: `since` is not a timestamp', false);
      const within = sinceMs !== undefined && this.now() - sinceMs < (this.options.cdcWindowMs ?? CDC_WINDOW_MS) - 60_000;
      pos = { phase: within ? 'd' : 'c', start: 1, ...(sinceMs !== undefined ? { since: Math.floor(sinceMs / 1000) * 1000 } : {}), ...(within ? {} : { scan: '0' }) };
    }
    if (pos.phase === 'd') return this.deletionsPage(entity, pos, req.signal);
    if (pos.phase === 'c') return this.checkPage(entity, pos, req.signal);
    return this.queryPage(entity, pos, pageSize, req.signal);
  }

  // ---------- the query listing ----------

  private async queryPage<E extends Entity>(entity: E, pos: QboPosition, pageSize: number, signal?: AbortSignal): Promise<Page<E>> {
    const name = QBO_ENTITY[entity];
    const max = Math.min(pos.narrowed ?? pageSize, pageSize);
    const statement = queryStatement(name, { ...(pos.since !== undefined ? { since: pos.since } : {}), start: pos.start, max });
    const page: Page<E> = { records: [], bad: [], ordered: false };
    let body: unknown;
    try {
      body = await this.http.get('query', { query: statement }, `query ${name} startposition ${pos.start}`, signal);
    } catch (err) {
      if (!narrowable(err)) throw err;
      if (max > 1) {
        this.logger?.warn({ entity: name, start: pos.start, max, fault: err.fault.message, intuit_tid: err.intuitTid }, 'quickbooks: a page failed; narrowing it down');
        page.nextPageToken = encodeQboToken({ ...pos, narrowed: Math.floor(max / 2) });
        return page;
      }
      // One record that QuickBooks cannot serve: set aside, and the listing goes on past it.
      const since = pos.since !== undefined ? ` since ${qboInstant(pos.since)}` : '';
      page.bad.push({ entity, place: `quickbooks:${name} at startposition ${pos.start} of the listing${since}`, reason: `${err.fault.type}: ${err.fault.message} (intuit_tid ${err.intuitTid ?? 'none'})` });
      const { narrowed: _n, ...rest } = pos;
      page.nextPageToken = encodeQboToken({ ...rest, start: pos.start + 1 });
      return page;
    }
    const parsed = parseQueryResponse(body, name);
    if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: query ${name} startposition ${pos.start}: ${parsed.reason}`, false);
    const items = parsed.items;
    const seen = new Set(pos.ids ?? []);
    const positions: (ItemPosition | undefined)[] = [];
    const fresh: unknown[] = [];
    for (const item of items) {
      const outcome = mapQboItem(entity, item, this.options.realmId);
      positions.push(outcome.position);
      const p = outcome.position;
      if (p !== undefined && pos.after !== undefined && (p.ms < pos.after || (p.ms === pos.after && seen.has(p.id)))) continue;
      fresh.push(item);
    }
    await this.yieldItems(entity, fresh, page, (id, i) => placeOf(entity, id, `at startposition ${pos.start + i}`));
    const last = items.length < max;
    if (!last) page.nextPageToken = encodeQboToken(nextPosition(pos, positions, items.length));
    this.logger?.debug({ entity: name, start: pos.start, since: pos.since, items: items.length, records: page.records.length, bad: page.bad.length, last }, 'quickbooks page read');
    return page;
  }

  /**
   * Maps raw items into the page, remembering what a later deletion needs. Payments: one record per settled
   * invoice, plus a deleted one for each invoice the payment settled before and no longer does.
   */
  private async yieldItems<E extends Entity>(entity: E, items: readonly unknown[], page: Page<E>, place: (id: string | undefined, i: number) => string): Promise<void> {
    const outcomes = items.map((item) => mapQboItem(entity, item, this.options.realmId));
    const ids = outcomes.flatMap((o) => (o.kind === 'records' ? [o.position.id] : []));
    const before = entity === 'payments' ? await this.memory.get('payments', ids) : new Map<string, Seen['payments']>();
    const remember = new Map<string, Seen[E]>();
    outcomes.forEach((outcome, i) => {
      if (outcome.kind === 'bad') {
        const bad: BadRecord = { entity, place: place(outcome.platformId, i), reason: outcome.reason };
        if (outcome.platformId !== undefined) bad.platformId = outcome.platformId;
        page.bad.push(bad);
        return;
      }
      const id = outcome.position.id;
      page.records.push(...(outcome.records as RecordOf[E][]));
      if (entity === 'payments') {
        const lines = outcome.lines ?? {};
        const old = before.get(id);
        const first = outcome.records[0] as RecordOf['payments'] | undefined;
        const updatedAt = new Date(outcome.position.ms).toISOString();
        const date = outcome.date ?? old?.date ?? updatedAt.slice(0, 10);
        for (const [invoiceId, amount] of Object.entries(old?.lines ?? {})) {
          if ((lines[invoiceId] ?? 0) > 0) continue;
          const gone = checkRecord('payments', paymentRecord(id, invoiceId, { updatedAt, amount, date, deleted: true }));
          if (gone.ok) page.records.push(gone.record as RecordOf[E]);
        }
        const union: PaymentLines = { ...(old?.lines ?? {}) };
        for (const [invoiceId, amount] of Object.entries(lines)) if (amount > 0) union[invoiceId] = amount;
        remember.set(id, { date, ...(first?.reference !== undefined ? { reference: first.reference } : {}), lines: union } as Seen[E]);
      } else if (entity === 'invoices') {
        const r = outcome.records[0] as RecordOf['invoices'];
        remember.set(id, { contactId: r.contactId, number: r.number, date: r.date, dueDate: r.dueDate, total: r.total, ...(r.currencyCode ? { currencyCode: r.currencyCode } : {}) } as Seen[E]);
      } else {
        const r = outcome.records[0] as RecordOf['contacts'];
        remember.set(id, { name: r.name } as Seen[E]);
      }
    });
    await this.memory.put(entity, remember);
  }

  // ---------- deletions ----------

  /** The change feed since `pos.since`: the entities it calls deleted, confirmed by reading them by Id. */
  private async deletionsPage<E extends Entity>(entity: E, pos: QboPosition, signal?: AbortSignal): Promise<Page<E>> {
    const name = QBO_ENTITY[entity];
    const since = pos.since ?? 0;
    const body = await this.http.get('cdc', { entities: name, changedSince: qboInstant(since) }, `cdc ${name}`, signal);
    const parsed = parseCdcResponse(body, name);
    if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: cdc ${name}: ${parsed.reason}`, false);
    const deleted = new Map<string, number>();
    let newest = since;
    for (const raw of parsed.items) {
      const item = qboCdcItemSchema.safeParse(raw);
      if (!item.success || item.data.Id === undefined) continue;
      const ms = qboMs(item.data.MetaData?.LastUpdatedTime ?? undefined) ?? since;
      newest = Math.max(newest, ms);
      if (item.data.status?.toLowerCase() === 'deleted') deleted.set(item.data.Id, ms);
    }
    const page = await this.confirmGone(entity, deleted, signal);
    // A full answer may have left changes out: ask again from the newest stamp it held (if that moves forward).
    const full = parsed.items.length >= CDC_MAX && newest > since;
    page.nextPageToken = encodeQboToken(full ? { phase: 'd', start: 1, since: newest } : { phase: 'q', start: 1, ...(pos.since !== undefined ? { since: pos.since } : {}) });
    this.logger?.debug({ entity: name, changes: parsed.items.length, deleted: deleted.size, yielded: page.records.length }, 'quickbooks change feed read');
    return page;
  }

  /** Every remembered id, read back by Id a slice at a time: those QuickBooks no longer has are deletions. */
  private async checkPage<E extends Entity>(entity: E, pos: QboPosition, signal?: AbortSignal): Promise<Page<E>> {
    const step = await this.memory.scan(entity, pos.scan ?? '0', IDS_PER_QUERY);
    // When it happened is unknown (some time since the listing's lower bound): stamped there, it never moves the
    // cursor past records the listing has yet to yield.
    const at = pos.since ?? 0;
    const page = await this.confirmGone(entity, new Map(step.ids.map((id) => [id, at])), signal);
    const { scan: _s, ...rest } = pos;
    page.nextPageToken = encodeQboToken(step.cursor === '0' ? { ...rest, phase: 'q', start: 1 } : { ...rest, scan: step.cursor });
    return page;
  }

  /**
   * Reads `candidates` (id -> deletion stamp) by Id: those QuickBooks still serves are left to the query listing
   * (a change-feed "deletion" of an updated entity is stamped after `since`, so the listing yields it; an entity
   * the check finds unchanged has nothing to yield); the rest are yielded deleted, from what the adapter remembers.
   */
  private async confirmGone<E extends Entity>(entity: E, candidates: ReadonlyMap<string, number>, signal?: AbortSignal): Promise<Page<E>> {
    const name = QBO_ENTITY[entity];
    const page: Page<E> = { records: [], bad: [], ordered: false };
    const ids = [...candidates.keys()];
    const present = new Set<string>();
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const chunk = ids.slice(i, i + IDS_PER_QUERY);
      const body = await this.http.get('query', { query: queryStatement(name, { ids: chunk }) }, `query ${name} by Id`, signal);
      const parsed = parseQueryResponse(body, name);
      if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `quickbooks: query ${name} by Id: ${parsed.reason}`, false);
      for (const item of parsed.items) {
        const id = item !== null && typeof item === 'object' ? (item as Record<string, unknown>)['Id'] : undefined;
        if (typeof id === 'string') present.add(id.trim());
      }
    }
    const gone = ids.filter((id) => !present.has(id));
    const remembered = await this.memory.get(entity, gone);
    for (const id of gone) {
      const seen = remembered.get(id);
      if (seen === undefined) continue; // never yielded: nothing to stop
      const updatedAt = new Date(candidates.get(id) ?? this.now()).toISOString();
      for (const raw of deletedRecords(entity, id, seen as Seen[E], updatedAt)) {
        const checked = checkRecord(entity, raw);
        if (checked.ok) page.records.push(checked.record);
        else page.bad.push({ entity, place: placeOf(entity, id, ''), platformId: id, reason: `deleted in QuickBooks, but what was remembered of it is unusable: ${checked.reason}` });
      }
    }
    return page;
  }

  async close(): Promise<void> {
    await this.access.close().catch(() => undefined);
    await this.agent.close().catch(() => undefined);
  }
}

/** The deleted record(s) of an entity QuickBooks no longer has, from what was remembered when it was yielded. */
function deletedRecords<E extends Entity>(entity: E, id: string, seen: Seen[E], updatedAt: string): Record<string, unknown>[] {
  if (entity === 'contacts') return [{ id, updatedAt, deleted: true, name: (seen as Seen['contacts']).name }];
  if (entity === 'invoices') {
    const s = seen as Seen['invoices'];
    return [{ id, updatedAt, deleted: true, status: 'VOIDED', contactId: s.contactId, number: s.number, date: s.date, dueDate: s.dueDate, total: s.total, outstandingAmount: 0, ...(s.currencyCode ? { currencyCode: s.currencyCode } : {}) }];
  }
  const s = seen as Seen['payments'];
  return Object.entries(s.lines).map(([invoiceId, amount]) => paymentRecord(id, invoiceId, { updatedAt, amount, date: s.date, deleted: true }));
}

function narrowable(err: unknown): err is QuickBooksFaultError {
  if (!(err instanceof QuickBooksFaultError)) return false;
  if (err.fault.codes.some((c) => PARSER_CODES.has(c))) return false;
  return err.fault.type === 'ValidationFault' || err.fault.codes.some((c) => RECORD_SYSTEM_CODES.has(c));
}

/**
 * Where the next page starts: keyset (startposition 1 from the last stamp, skipping the ids at it) when the page
 * is in stamp order and that moves forward; the next offset of the same query otherwise. A narrowed MAXRESULTS is
 * kept until the record that failed is set aside (a binary search, not a restart from the full size each page).
 */
export function nextPosition(pos: QboPosition, positions: readonly (ItemPosition | undefined)[], count: number): QboPosition {
  const known = positions.filter((p): p is ItemPosition => p !== undefined);
  const sorted = known.length === positions.length && known.every((p, i) => i === 0 || known[i - 1]!.ms <= p.ms);
  const lastMs = known.length > 0 ? known[known.length - 1]!.ms : undefined;
  const base = pos;
  if (!sorted || lastMs === undefined) return { ...base, start: pos.start + count };
  const ids = known.filter((p) => p.ms === lastMs).map((p) => p.id);
  const carried = pos.after === lastMs ? [...new Set([...(pos.ids ?? []), ...ids])] : ids;
  if ((pos.since === undefined || lastMs > pos.since) && carried.length <= MAX_TIED_IDS) {
    return { phase: 'q', start: 1, since: lastMs, after: lastMs, ids: carried, ...(pos.narrowed !== undefined ? { narrowed: pos.narrowed } : {}) };
  }
  const next: QboPosition = { ...base, start: pos.start + count, after: lastMs };
  if (carried.length <= MAX_TIED_IDS) next.ids = carried;
  else delete next.ids;
  return next;
}
