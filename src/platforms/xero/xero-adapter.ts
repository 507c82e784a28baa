/**
 * The `xero` adapter: contacts, receivable invoices and their payments from Xero's Accounting API, page by page.
 *
 * Reading: `GET /Contacts` (`includeArchived=true`), `/Invoices` (`where=Type=="ACCREC"`), `/Payments`, each with
 * `order=UpdatedDateUTC ASC`, `page`, `pageSize` (up to 1000) and `If-Modified-Since` (second precision, from
 * `since`, which already includes the engine's lookback). A listing ends at `pagination.pageCount`, a short page
 * or an empty one. Contacts wanted by id (`readContacts`): `GET /Contacts?IDs=`, 50 ids a call, no stamp.
 *
 * Paging is keyset where it can be: when a full page is in UpdatedDateUTC order, the next page asks again from
 * one second before its last record (page 1), and skips what was already yielded (the token keeps the last stamp
 * and the ids at it). Offset paging under a moving sort skips records (a record updated mid-listing moves to the
 * end and shifts the rest); keyset paging does not. When a whole page shares one second (a bulk update) the next
 * page is the next offset of the same query. Ties in UpdatedDateUTC are not in id order, so pages are not
 * `ordered`; the engine moves the cursor when the listing ends.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import type { Entity } from '../../glossary.js';
import { compareCursor, PlatformError, type BadRecord, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import { connectionAccess } from '../oauth/chain.js';
import { TokenCipher } from '../oauth/cipher.js';
import type { PlatformAuth, PlatformAuthHooks, PlatformAuthSettings } from '../oauth/oauth.js';
import type { PlatformLimits, PlatformRateLimiter } from '../oauth/rate-limiter.js';
import type { XeroConfig } from './config.js';
import { ifModifiedSince } from './dates.js';
import { XeroHttp, xeroThrottleDefaultMs, type XeroHttpSettings } from './http.js';
import { xeroOAuth } from './oauth.js';
import { mapXeroItem, type ItemPosition } from './mapping.js';
import { decodeXeroToken, encodeXeroToken, type XeroPosition } from './page-token.js';
import { parseListing, XERO_COLLECTION } from './schemas.js';

export interface XeroAdapterOptions {
  /** A Redis connection for tokens and limits (the app's; not closed by the adapter). */
  redis: Redis;
  /** KEY_PREFIX: keys are `<prefix>:xero:<xeroTenantId>:...` (src/redis/keys.ts). */
  prefix: string;
  /** PLATFORM_TOKEN_KEY (32 bytes, base64 or hex), or a ready cipher. */
  tokenKey: string | TokenCipher;
  /** The tenant's platform config (app credentials, the tenants file's refresh token, addresses). */
  config: XeroConfig;
  /** The organisation: the config's xeroTenantId, or the one a connect link bound. */
  xeroTenantId: string;
  logger?: Logger;
  http?: Partial<XeroHttpSettings> & { connectTimeoutMs?: number };
  auth?: Partial<PlatformAuthSettings>;
  limits?: Partial<PlatformLimits>;
  hooks?: PlatformAuthHooks;
}

export const DEFAULT_XERO_PAGE_SIZE = 100;
export const MAX_XERO_PAGE_SIZE = 1000;
/** At most this many ids at one stamp are carried in a token; more means offset paging for that step. */
const MAX_TIED_IDS = 50;
/** ContactIDs asked for in one `GET /Contacts?IDs=` (36 characters each: the URL stays short). */
const IDS_PER_CALL = 50;

export class XeroAdapter implements PlatformAdapter {
  readonly kind = 'xero';
  readonly auth: PlatformAuth;
  readonly limiter: PlatformRateLimiter;
  private readonly http: XeroHttp;
  private readonly agent: Agent;
  private readonly logger: Logger | undefined;

  constructor(private readonly options: XeroAdapterOptions) {
    const cipher = typeof options.tokenKey === 'string' ? TokenCipher.fromText(options.tokenKey) : options.tokenKey;
    this.logger = options.logger;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connections: 16,
      connect: { timeout: options.http?.connectTimeoutMs ?? 5_000 },
    });
    const { auth, limiter, access } = connectionAccess(xeroOAuth, options.config, options.xeroTenantId, undefined, {
      redis: options.redis,
      prefix: options.prefix,
      cipher,
      dispatcher: this.agent,
      logger: options.logger,
      hooks: options.hooks,
      settings: options.auth,
      limits: options.limits,
      throttleDefaultMs: (scope, l) => xeroThrottleDefaultMs(scope, l.limits.dayBlockMs),
    });
    this.auth = auth;
    this.limiter = limiter;
    this.http = new XeroHttp({
      apiUrl: options.config.apiUrl,
      xeroTenantId: options.xeroTenantId,
      access,
      dispatcher: this.agent,
      ...(options.http ? { settings: options.http } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const pageSize = Math.min(Math.max(1, Math.floor(req.pageSize ?? DEFAULT_XERO_PAGE_SIZE)), MAX_XERO_PAGE_SIZE);
    const sinceMs = req.since ? Date.parse(req.since.updatedAt) : undefined;
    if (sinceMs !== undefined && Number.isNaN(sinceMs)) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'xero adapter: `since` is not a timestamp', false);
    const pos: XeroPosition = req.pageToken !== undefined ? decodeXeroToken(req.pageToken) : { page: 1, ...(sinceMs !== undefined ? { since: Math.floor(sinceMs / 1000) * 1000 } : {}) };
    const collection = XERO_COLLECTION[entity];

    const query = new URLSearchParams({ page: String(pos.page), pageSize: String(pageSize), order: 'UpdatedDateUTC ASC' });
    if (entity === 'contacts') query.set('includeArchived', 'true');
    if (entity === 'invoices') query.set('where', 'Type=="ACCREC"');
    const headers: Record<string, string> = {};
    if (pos.since !== undefined) headers['if-modified-since'] = ifModifiedSince(pos.since);

    const got = await this.http.get(`/${collection}`, query, headers, req.signal);
    const page: Page<E> = { records: [], bad: [], ordered: false };
    if (got.kind === 'not-modified') return page;
    const parsed = parseListing(got.body, collection);
    if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `xero: GET /${collection} page ${pos.page}: ${parsed.reason}`, false);
    const { items, pagination } = parsed.listing;

    const seen = new Set(pos.ids ?? []);
    const positions: (ItemPosition | undefined)[] = [];
    let skipped = 0;
    items.forEach((item, i) => {
      const outcome = mapXeroItem(entity, item, this.options.xeroTenantId);
      positions.push(outcome.position);
      const p = outcome.position;
      // Already yielded by an earlier page of this listing (the overlap of a keyset step).
      if (p !== undefined && pos.after !== undefined && (p.ms < pos.after || (p.ms === pos.after && seen.has(p.id)))) return;
      if (outcome.kind === 'skip') {
        skipped += 1;
        return;
      }
      if (outcome.kind === 'bad') {
        const bad: BadRecord = { entity, place: `xero:${collection} page ${pos.page} #${i + 1}`, reason: outcome.reason };
        if (outcome.platformId !== undefined) bad.platformId = outcome.platformId;
        page.bad.push(bad);
        return;
      }
      if (req.since && compareCursor({ updatedAt: outcome.record.updatedAt, id: outcome.record.id }, req.since) < 0) return;
      page.records.push(outcome.record);
    });

    // Xero's pagination block is the authority; without it, a page shorter than asked is the last.
    const last =
      items.length === 0 ||
      (pagination?.pageCount !== undefined ? pos.page >= pagination.pageCount : items.length < (pagination?.pageSize ?? pageSize));
    if (!last) page.nextPageToken = encodeXeroToken(nextPosition(pos, positions));
    this.logger?.debug(
      { entity, page: pos.page, since: pos.since, items: items.length, records: page.records.length, bad: page.bad.length, skipped, last },
      'xero page read',
    );
    return page;
  }

  async readContacts(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
    const page: Page<'contacts'> = { records: [], bad: [], ordered: false };
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += IDS_PER_CALL) {
      signal?.throwIfAborted();
      const chunk = unique.slice(i, i + IDS_PER_CALL);
      const query = new URLSearchParams({ IDs: chunk.join(','), includeArchived: 'true', page: '1', pageSize: String(IDS_PER_CALL) });
      const got = await this.http.get('/Contacts', query, {}, signal);
      if (got.kind === 'not-modified') continue;
      const parsed = parseListing(got.body, 'Contacts');
      if (!parsed.ok) throw new PlatformError('PLATFORM_BAD_RESPONSE', `xero: GET /Contacts by id: ${parsed.reason}`, false);
      const wanted = new Set(chunk);
      for (const item of parsed.listing.items) {
        const outcome = mapXeroItem('contacts', item, this.options.xeroTenantId);
        const id = outcome.kind === 'record' ? outcome.record.id : outcome.kind === 'bad' ? outcome.platformId : undefined;
        if (id === undefined || !wanted.has(id)) continue; // only what was asked for
        if (outcome.kind === 'record') page.records.push(outcome.record);
        else if (outcome.kind === 'bad') page.bad.push({ entity: 'contacts', place: 'xero:Contacts by id', platformId: id, reason: outcome.reason });
      }
    }
    this.logger?.debug({ asked: unique.length, records: page.records.length, bad: page.bad.length }, 'xero contacts read by id');
    return page;
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}

/**
 * Where the next page starts. Keyset (page 1 from one second before the last stamp) when the page is sorted by
 * stamp and that moves the query forward; the next offset of the same query otherwise.
 */
export function nextPosition(pos: XeroPosition, positions: readonly (ItemPosition | undefined)[]): XeroPosition {
  const known = positions.filter((p): p is ItemPosition => p !== undefined);
  const sorted = known.length === positions.length && known.every((p, i) => i === 0 || known[i - 1]!.ms <= p.ms);
  const lastMs = known.length > 0 ? known[known.length - 1]!.ms : undefined;
  if (!sorted || lastMs === undefined) {
    const next: XeroPosition = { page: pos.page + 1 };
    if (pos.since !== undefined) next.since = pos.since;
    return next;
  }
  const ids = known.filter((p) => p.ms === lastMs).map((p) => p.id);
  const carried = pos.after === lastMs ? [...new Set([...(pos.ids ?? []), ...ids])] : ids;
  const jump = Math.floor(lastMs / 1000) * 1000 - 1000;
  if ((pos.since === undefined || jump > pos.since) && carried.length <= MAX_TIED_IDS) {
    return { page: 1, since: jump, after: lastMs, ids: carried };
  }
  const next: XeroPosition = { page: pos.page + 1, after: lastMs };
  if (pos.since !== undefined) next.since = pos.since;
  if (carried.length <= MAX_TIED_IDS) next.ids = carried;
  return next;
}
