/**
 * The `zoho-books` adapter: customers (and the vendors invoices need), invoices and customer payments of one Zoho
 * Books organization, page by page, at the connection's API domain (`<api_domain>/books/v3`).
 *
 * Reading: `GET /contacts` (`filter_by=Status.All`: inactive ones too), `/invoices`, `/customerpayments`, each with
 * `sort_column=last_modified_time&sort_order=A`, `page`, `per_page` (up to 200) and, incrementally,
 * `last_modified_time` (from `since`, which already holds the engine's lookback). A listing ends when
 * `page_context.has_more_page` is false. Paging is keyset where it can be (as Xero's and QuickBooks'): after a full
 * page in stamp order, the next asks again from one second before its last stamp and skips what was yielded (the
 * token keeps the last stamp and the ids at it); a page that all shares one second steps by page number. Ties are in
 * no id order, so pages are not `ordered`: the engine moves the cursor when the listing ends.
 *
 * Details: a payment's listing item does not name its invoices, so each payment listed is read by id
 * (`GET /customerpayments/{id}`). A contact's persons are only in its detail: customers listed with a receivable
 * outstanding are read by id, at most `detailBudget` a page (the rest keep their persons as they are).
 * Deletions: Zoho lists no deleted records. A since-less invoice listing (a reconcile pass, a full run) notes every id
 * it sees; after it, every remembered invoice it did not see is read by id, and one that answers 404 (code 1002) is
 * yielded deleted (stops being collected), from what was remembered of it.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import type { Entity } from '../../glossary.js';
import { checkRecord, type RecordOf } from '../records.js';
import { compareCursor, PlatformError, type BadRecord, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import type { Binding } from '../oauth/binding.js';
import { connectionAccess } from '../oauth/chain.js';
import { TokenCipher } from '../oauth/cipher.js';
import type { PlatformAuth, PlatformAuthHooks, PlatformAuthSettings } from '../oauth/oauth.js';
import type { PlatformLimits, PlatformRateLimiter } from '../oauth/rate-limiter.js';
import type { ZohoBooksConfig } from './config.js';
import { zohoInstant } from './dates.js';
import { ZohoHttp, zohoThrottleDefaultMs, type ZohoHttpSettings } from './http.js';
import { mapZohoItem, paymentRecord, type ItemPosition, type ZohoOutcome } from './mapping.js';
import { ZohoMemory, type Seen } from './memory.js';
import { apiDomainOf, zohoBooksOAuth } from './oauth.js';
import { decodeZohoToken, encodeZohoToken, type ZohoPosition } from './page-token.js';
import { parseDetail, parseListing, ZOHO_ENTITY } from './schemas.js';

export interface ZohoBooksAdapterOptions {
  /** The fleet's Redis (tokens, limits, what is remembered; not closed here). */
  redis: Redis;
  /** KEY_PREFIX. */
  prefix: string;
  /** PLATFORM_TOKEN_KEY (32 bytes, base64 or hex), or a ready cipher. */
  tokenKey: string | TokenCipher;
  config: ZohoBooksConfig;
  /** The organization: the config's organizationId, or the one a connect link bound. */
  organizationId: string;
  /** The connect link's binding: its data centre's accounts server and API domain. */
  binding?: Binding | undefined;
  logger?: Logger;
  http?: Partial<ZohoHttpSettings> & { connectTimeoutMs?: number };
  auth?: Partial<PlatformAuthSettings>;
  limits?: Partial<PlatformLimits>;
  hooks?: PlatformAuthHooks;
  /** Contacts read by id for their persons, at most this many a page. Default 20. */
  detailBudget?: number;
}

export const DEFAULT_ZOHO_PAGE_SIZE = 200;
export const MAX_ZOHO_PAGE_SIZE = 200;
/**
 * Payments listed a page: each costs a detail read besides, so a page of 200 would cost 201 requests, over two minutes
 * of Zoho's 100 a minute: the run is rescheduled by the limit mid-page and reads the same page again, for ever (the
 * bench's first sync of 300 customers never ended). 25 make 26 requests, a quarter of a minute's allowance, so each
 * page ends and is checkpointed before the limit stops the run, and the next run goes on from there.
 */
export const ZOHO_PAYMENTS_PAGE_SIZE = 25;
const MAX_TIED_IDS = 50;
/** Remembered invoices looked at per reconcile check page. */
const CHECK_SCAN = 50;

export class ZohoBooksAdapter implements PlatformAdapter {
  readonly kind = 'zoho-books';
  readonly auth: PlatformAuth;
  readonly limiter: PlatformRateLimiter;
  private readonly http: ZohoHttp;
  private readonly agent: Agent;
  private readonly memory: ZohoMemory;
  private readonly logger: Logger | undefined;
  private readonly org: string;

  constructor(private readonly options: ZohoBooksAdapterOptions) {
    const cipher = typeof options.tokenKey === 'string' ? TokenCipher.fromText(options.tokenKey) : options.tokenKey;
    this.logger = options.logger;
    this.org = options.organizationId;
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 16, connect: { timeout: options.http?.connectTimeoutMs ?? 5_000 } });
    const { auth, limiter, access } = connectionAccess(zohoBooksOAuth, options.config, options.organizationId, options.binding, {
      redis: options.redis,
      prefix: options.prefix,
      cipher,
      dispatcher: this.agent,
      logger: options.logger,
      hooks: options.hooks,
      settings: options.auth,
      limits: options.limits,
      throttleDefaultMs: (scope, l) => zohoThrottleDefaultMs(scope, l.limits.dayBlockMs),
    });
    this.auth = auth;
    this.limiter = limiter;
    this.memory = new ZohoMemory(options.redis, options.prefix, options.organizationId);
    this.http = new ZohoHttp({
      apiDomain: apiDomainOf(options.config, options.binding),
      organizationId: options.organizationId,
      access,
      dispatcher: this.agent,
      ...(options.http ? { settings: options.http } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const perPage = Math.min(Math.max(1, Math.floor(req.pageSize ?? DEFAULT_ZOHO_PAGE_SIZE)), entity === 'payments' ? ZOHO_PAYMENTS_PAGE_SIZE : MAX_ZOHO_PAGE_SIZE);
    let pos: ZohoPosition;
    if (req.pageToken !== undefined) pos = decodeZohoToken(req.pageToken);
    else {
      const sinceMs = req.since ? Date.parse(req.since.updatedAt) : undefined;
      if (sinceMs !== undefined && Number.isNaN(sinceMs)) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'zoho-books adapter: `since` is not a timestamp', false);
      pos = { phase: 'l', page: 1, ...(sinceMs !== undefined ? { since: Math.floor(sinceMs / 1000) * 1000 } : {}), ...(entity === 'invoices' && sinceMs === undefined ? { seen: randomBytes(12).toString('hex') } : {}) };
    }
    if (pos.phase === 'c') return (await this.checkPage(pos, req.signal)) as Page<E>;
    return this.listingPage(entity, pos, perPage, req);
  }

  private async listingPage<E extends Entity>(entity: E, pos: ZohoPosition, perPage: number, req: PageRequest): Promise<Page<E>> {
    const { path, list } = ZOHO_ENTITY[entity];
    const params: Record<string, string> = { page: String(pos.page), per_page: String(perPage), sort_column: 'last_modified_time', sort_order: 'A' };
    if (pos.since !== undefined) params['last_modified_time'] = zohoInstant(pos.since);
    if (entity === 'contacts') params['filter_by'] = 'Status.All';
    const got = await this.http.get(path, params, req.signal);
    if (got.kind === 'gone') throw new PlatformError('PLATFORM_BAD_RESPONSE', `zoho-books: GET /${path} page ${pos.page} answered 404 (code ${got.code})`, false);
    const parsed = parseListing(got.body, list);
    if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `zoho-books: GET /${path} page ${pos.page}: ${parsed.reason}`, false);
    const { items } = parsed;

    const page: Page<E> = { records: [], bad: [], ordered: false };
    const seen = new Set(pos.ids ?? []);
    const positions: (ItemPosition | undefined)[] = [];
    let budget = this.options.detailBudget ?? 20;
    const remember = new Map<string, Seen['invoices']>();
    const listed: string[] = [];
    for (const [i, item] of items.entries()) {
      let outcome = mapZohoItem(entity, item, this.org);
      positions.push(outcome.position);
      const p = outcome.position;
      if (p !== undefined) listed.push(p.id);
      // Already yielded by an earlier page of this listing (the overlap of a keyset step).
      if (p !== undefined && pos.after !== undefined && (p.ms < pos.after || (p.ms === pos.after && seen.has(p.id)))) continue;
      const place = `zoho-books:${path} page ${pos.page} #${i + 1}`;
      if (outcome.kind === 'records' && entity === 'payments') {
        const detail = await this.detail('payments', outcome.position.id, req.signal);
        if (detail === undefined) continue; // deleted since it was listed
        outcome = detail as ZohoOutcome<E>;
        if (outcome.kind === 'records') await this.paymentLines(outcome as ZohoOutcome<'payments'> & { kind: 'records' }, page as Page<'payments'>);
      } else if (outcome.kind === 'records' && entity === 'contacts' && budget > 0 && wantsPersons(outcome as ZohoOutcome<'contacts'> & { kind: 'records' })) {
        budget -= 1;
        const detail = await this.detail('contacts', outcome.position.id, req.signal);
        if (detail !== undefined) outcome = detail as ZohoOutcome<E>;
      }
      if (outcome.kind === 'bad') {
        const bad: BadRecord = { entity, place, reason: outcome.reason };
        if (outcome.platformId !== undefined) bad.platformId = outcome.platformId;
        page.bad.push(bad);
        continue;
      }
      for (const record of outcome.records) {
        if (req.since && compareCursor({ updatedAt: record.updatedAt, id: record.id }, req.since) < 0) continue;
        page.records.push(record);
        if (entity === 'invoices') {
          const r = record as RecordOf['invoices'];
          remember.set(r.id, { contactId: r.contactId, number: r.number, date: r.date, dueDate: r.dueDate, total: r.total, ...(r.currencyCode ? { currencyCode: r.currencyCode } : {}) });
        }
      }
    }
    await this.memory.put('invoices', remember);
    if (pos.seen !== undefined) await this.memory.saw(pos.seen, listed);

    const more = parsed.hasMore ?? items.length >= perPage;
    if (more && items.length > 0) page.nextPageToken = encodeZohoToken(nextPosition(pos, positions));
    else if (pos.seen !== undefined) page.nextPageToken = encodeZohoToken({ phase: 'c', page: 1, scan: '0', seen: pos.seen });
    this.logger?.debug({ entity, page: pos.page, since: pos.since, items: items.length, records: page.records.length, bad: page.bad.length, more }, 'zoho-books page read');
    return page;
  }

  /** A record's detail, mapped; undefined when Zoho no longer has it (404). */
  private async detail<E extends 'contacts' | 'payments'>(entity: E, id: string, signal?: AbortSignal): Promise<ZohoOutcome<E> | undefined> {
    const { path, one } = ZOHO_ENTITY[entity];
    const got = await this.http.get(`${path}/${encodeURIComponent(id)}`, {}, signal);
    if (got.kind === 'gone') return undefined;
    return mapZohoItem(entity, parseDetail(got.body, one), this.org);
  }

  /** Remembers what a payment is applied to, and yields a deleted record for each invoice it no longer is. */
  private async paymentLines(outcome: ZohoOutcome<'payments'> & { kind: 'records' }, page: Page<'payments'>): Promise<void> {
    const id = outcome.position.id;
    const lines = Object.fromEntries(outcome.records.map((r) => [r.invoiceId, r.amount]));
    const old = (await this.memory.get('payments', [id])).get(id);
    const updatedAt = new Date(outcome.position.ms).toISOString();
    const date = outcome.records[0]?.date ?? old?.date ?? updatedAt.slice(0, 10);
    for (const [invoiceId, amount] of Object.entries(old?.lines ?? {})) {
      if (lines[invoiceId] !== undefined) continue;
      const gone = checkRecord('payments', paymentRecord(id, invoiceId, { updatedAt, amount, date, deleted: true }));
      if (gone.ok) page.records.push(gone.record);
    }
    await this.memory.put('payments', new Map([[id, { date, lines: { ...old?.lines, ...lines } }]]));
  }

  /** The reconcile check: remembered invoices the listing did not see, read by id; those gone are yielded deleted. */
  private async checkPage(pos: ZohoPosition, signal?: AbortSignal): Promise<Page<'invoices'>> {
    const page: Page<'invoices'> = { records: [], bad: [], ordered: false };
    const listing = pos.seen!;
    const step = await this.memory.scan('invoices', pos.scan ?? '0', CHECK_SCAN);
    const saw = await this.memory.sawOf(listing, step.ids);
    const missing = step.ids.filter((id) => !saw.has(id));
    const remembered = await this.memory.get('invoices', missing);
    const gone: string[] = [];
    for (const id of missing) {
      const got = await this.http.get(`invoices/${encodeURIComponent(id)}`, {}, signal);
      if (got.kind !== 'gone') continue; // still there: listed meanwhile under a newer stamp, the next run reads it
      gone.push(id);
      const s = remembered.get(id);
      if (s === undefined) continue;
      // When it was deleted is unknown: stamped at the epoch, it never moves a cursor past records yet to be read.
      const checked = checkRecord('invoices', { id, updatedAt: new Date(0).toISOString(), deleted: true, status: 'VOIDED', contactId: s.contactId, number: s.number, date: s.date, dueDate: s.dueDate, total: s.total, outstandingAmount: 0, ...(s.currencyCode ? { currencyCode: s.currencyCode } : {}) });
      if (checked.ok) page.records.push(checked.record);
      else page.bad.push({ entity: 'invoices', place: `zoho-books:invoices/${id}`, platformId: id, reason: `deleted in Zoho Books, but what was remembered of it is unusable: ${checked.reason}` });
    }
    await this.memory.forget('invoices', gone);
    if (step.cursor === '0') await this.memory.endListing(listing);
    else page.nextPageToken = encodeZohoToken({ ...pos, scan: step.cursor });
    this.logger?.debug({ checked: step.ids.length, missing: missing.length, deleted: gone.length }, 'zoho-books reconcile check');
    return page;
  }

  async readContacts(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
    const page: Page<'contacts'> = { records: [], bad: [], ordered: false };
    for (const id of new Set(ids)) {
      signal?.throwIfAborted();
      const outcome = await this.detail('contacts', id, signal);
      if (outcome === undefined) continue;
      if (outcome.kind === 'records') page.records.push(...outcome.records);
      else page.bad.push({ entity: 'contacts', place: `zoho-books:contacts/${id}`, platformId: id, reason: outcome.reason });
    }
    return page;
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}

/** A customer whose persons are worth a detail read: one with a receivable outstanding (it has invoices to collect). */
function wantsPersons(outcome: ZohoOutcome<'contacts'> & { kind: 'records' }): boolean {
  const c = outcome.item;
  return c.contact_type?.toLowerCase() !== 'vendor' && (c.outstanding_receivable_amount ?? 0) > 0;
}

/**
 * Where the next page starts: keyset (page 1 from one second before the last stamp, skipping the ids at it) when the
 * page is in stamp order and that moves the query forward; the next page of the same query otherwise.
 */
export function nextPosition(pos: ZohoPosition, positions: readonly (ItemPosition | undefined)[]): ZohoPosition {
  const known = positions.filter((p): p is ItemPosition => p !== undefined);
  const sorted = known.length === positions.length && known.every((p, i) => i === 0 || known[i - 1]!.ms <= p.ms);
  const lastMs = known.length > 0 ? known[known.length - 1]!.ms : undefined;
  const keep = pos.seen !== undefined ? { seen: pos.seen } : {};
  if (!sorted || lastMs === undefined) return { ...pos, page: pos.page + 1 };
  const ids = known.filter((p) => p.ms === lastMs).map((p) => p.id);
  const carried = pos.after === lastMs ? [...new Set([...(pos.ids ?? []), ...ids])] : ids;
  const jump = Math.floor(lastMs / 1000) * 1000 - 1000;
  if ((pos.since === undefined || jump > pos.since) && carried.length <= MAX_TIED_IDS) return { phase: 'l', page: 1, since: jump, after: lastMs, ids: carried, ...keep };
  const next: ZohoPosition = { phase: 'l', page: pos.page + 1, after: lastMs, ...keep };
  if (pos.since !== undefined) next.since = pos.since;
  if (carried.length <= MAX_TIED_IDS) next.ids = carried;
  return next;
}
