/**
 * The odoo adapter: customers, customer invoices and customer payments of one company of one Odoo database, read over
 * JSON-2 or JSON-RPC (transport.ts) with reading methods only. Every listing is paged (at most 500 rows a request) in
 * (write_date, id) order with keyset paging from the run's cursor (less its lookback), and archived records are
 * read too (`active in [true, false]`). The company is resolved before the first page (decision 0212).
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import type { Entity } from '../../glossary.js';
import type { RecordOf } from '../records.js';
import { PlatformError, PlatformNotConnectedError, type BadRecord, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import type { OdooConfig } from './config.js';
import { mapMove, mapPartner, mapPayment, odooDatetime, personFrom, CHILD_FIELDS, MOVE_FIELDS, PARTNER_FIELDS, PAYMENT_FIELDS, type Outcome } from './mapping.js';
import { OdooKeyState, odooDatabase, type KeyStateHooks } from './key-state.js';
import { OdooMemory, odooConnection, type SeenPayment } from './memory.js';
import { decodeOdooToken, encodeOdooToken, type OdooPosition } from './page-token.js';
import { companySchema, ODOO_DATETIME, rowsSchema, type OdooCompany } from './schemas.js';
import { OdooClient, type OdooCall, type OdooHttpSettings } from './transport.js';

export interface OdooAdapterOptions {
  config: OdooConfig;
  logger?: Logger | undefined;
  /** The fleet's Redis and KEY_PREFIX: what is remembered of payments (without them, an undone payment is not withdrawn). */
  redis?: Redis | undefined;
  prefix?: string | undefined;
  http?: Partial<OdooHttpSettings>;
  /** Told once across the fleet when the key is refused, and when a key works again (connection.changed). */
  hooks?: KeyStateHooks;
}

export const DEFAULT_ODOO_PAGE_SIZE = 200;
/** The most rows one request asks for (decision 0210): never an unbounded read. */
export const MAX_ODOO_PAGE_SIZE = 500;
/** Companies are few; more than this in one database is read as the first 500 (by id). */
const MAX_COMPANIES = 500;
const ORDER = 'write_date asc, id asc';

const MODEL: Record<Entity, { model: string; fields: readonly string[] }> = {
  contacts: { model: 'res.partner', fields: PARTNER_FIELDS },
  invoices: { model: 'account.move', fields: MOVE_FIELDS },
  payments: { model: 'account.payment', fields: PAYMENT_FIELDS },
};

/** What an entity's listing reads, in prefix notation (terms side by side are and-ed). */
export function entityDomain(entity: Entity, companyId: number): unknown[] {
  if (entity === 'contacts') {
    // Commercial entities (a company, or an individual without a parent), archived ones too; shared or this company's.
    return ['|', ['is_company', '=', true], ['parent_id', '=', false], ['active', 'in', [true, false]], '|', ['company_id', '=', false], ['company_id', '=', companyId]];
  }
  if (entity === 'invoices') return [['move_type', '=', 'out_invoice'], ['state', 'in', ['posted', 'cancel']], ['company_id', '=', companyId]];
  return [['payment_type', '=', 'inbound'], ['partner_type', '=', 'customer'], ['state', '!=', 'draft'], ['company_id', '=', companyId]];
}

/** Where a listing starts or goes on: from `since` (write_date at or after it), or after the last row of a page. */
export function cursorDomain(pos: { since?: string | undefined; after?: OdooPosition | undefined }): unknown[] {
  if (pos.after !== undefined) return ['|', ['write_date', '>', pos.after.w], '&', ['write_date', '=', pos.after.w], ['id', '>', pos.after.i]];
  return pos.since !== undefined ? [['write_date', '>=', pos.since]] : [];
}

export class OdooAdapter implements PlatformAdapter {
  readonly kind = 'odoo';
  readonly client: OdooClient;
  private readonly agent: Agent;
  private readonly logger: Logger | undefined;
  #company: OdooCompany | undefined;
  readonly #keyState: OdooKeyState | undefined;
  #memory: OdooMemory | undefined;

  constructor(private readonly o: OdooAdapterOptions) {
    this.logger = o.logger;
    this.#keyState = o.redis !== undefined && o.prefix !== undefined ? new OdooKeyState(o.redis, o.prefix, odooDatabase(o.config.url, o.config.database), o.hooks) : undefined;
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 4, connect: { timeout: 10_000 } });
    this.client = new OdooClient({
      url: o.config.url,
      database: o.config.database,
      username: o.config.username,
      apiKey: o.config.apiKey,
      protocol: o.config.protocol,
      dispatcher: this.agent,
      ...(o.http ? { settings: o.http } : {}),
      logger: o.logger,
    });
  }

  /**
   * The company whose records are read: the config's `companyId` if the bot user can read it; else the database's
   * only company. Several and none named: the run waits (PLATFORM_NOT_CONNECTED) naming them (decision 0212).
   */
  async company(signal?: AbortSignal): Promise<OdooCompany> {
    if (this.#company !== undefined) return this.#company;
    const raw = await this.call({ model: 'res.company', method: 'search_read', domain: [], fields: ['id', 'name'], limit: MAX_COMPANIES, order: 'id asc' }, signal);
    const parsed = companySchema.array().safeParse(raw);
    if (!parsed.success) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'odoo: res.company.search_read answered rows that are not companies', false);
    const companies = parsed.data;
    const named = companies.map((c) => `${c.id} "${c.name}"`).join(', ');
    const { companyId } = this.o.config;
    let company: OdooCompany | undefined;
    if (companyId !== undefined) {
      company = companies.find((c) => c.id === companyId);
      if (company === undefined) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: companyId ${companyId} is not a company the bot user can read in database "${this.o.config.database}" (it can read ${named || 'none'}): fix companyId, or give the user that company (Settings, Users, Allowed Companies)`, false);
    } else if (companies.length === 1) company = companies[0]!;
    else if (companies.length === 0) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: the bot user can read no company in database "${this.o.config.database}"`, false);
    else {
      const message = `odoo: database "${this.o.config.database}" holds ${companies.length} companies: ${named}; set the tenant's platform.companyId to the one whose receivables this tenant collects`;
      await this.#keyState?.unchosen(message);
      throw new PlatformNotConnectedError(message);
    }
    this.#company = company;
    await this.#keyState?.chosen();
    if (this.o.redis !== undefined && this.o.prefix !== undefined) this.#memory = new OdooMemory(this.o.redis, this.o.prefix, odooConnection(this.o.config.url, this.o.config.database, company.id));
    return company;
  }

  /** One call to Odoo, the key's state kept: a refusal marked (and told once), a key that works again cleared. */
  private async call(call: OdooCall, signal?: AbortSignal): Promise<unknown> {
    try {
      const answer = await this.client.call(call, signal);
      await this.#keyState?.accepted();
      return answer;
    } catch (err) {
      if (err instanceof PlatformError && err.code === 'PLATFORM_AUTH_FAILED') await this.#keyState?.refused(err.message).catch(() => undefined);
      throw err;
    }
  }

  private context(companyId: number): Record<string, unknown> {
    // Multi-company record rules let a user read the companies of `allowed_company_ids` (its default company otherwise).
    return { allowed_company_ids: [companyId] };
  }

  private async rows(call: OdooCall, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const raw = await this.call(call, signal);
    const parsed = rowsSchema.safeParse(raw);
    if (!parsed.success) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${call.model}.${call.method} answered something that is not a list of records`, false);
    return parsed.data;
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const limit = Math.min(Math.max(1, Math.floor(req.pageSize ?? DEFAULT_ODOO_PAGE_SIZE)), MAX_ODOO_PAGE_SIZE);
    const after = req.pageToken !== undefined ? decodeOdooToken(req.pageToken) : undefined;
    if (req.since !== undefined && Number.isNaN(Date.parse(req.since.updatedAt))) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'odoo adapter: `since` is not a timestamp', false);
    const since = req.since !== undefined ? odooDatetime(req.since.updatedAt) : undefined;
    const company = await this.company(req.signal);
    const { model, fields } = MODEL[entity];
    const rows = await this.rows({ model, method: 'search_read', domain: [...cursorDomain({ since, after }), ...entityDomain(entity, company.id)], fields, limit, order: ORDER, context: this.context(company.id) }, req.signal);

    const page: Page<E> = { records: [], bad: [], ordered: false };
    const outcomes = await this.map(entity, rows, company.id, req.signal);
    outcomes.forEach((outcome, i) => {
      if (outcome.kind === 'records') page.records.push(...(outcome.records as RecordOf[E][]));
      else {
        const bad: BadRecord = { entity, place: `odoo:${model} ${after === undefined ? 'first page' : `after ${after.w} #${after.i}`} row ${i + 1}`, reason: outcome.reason };
        if (outcome.platformId !== undefined) bad.platformId = outcome.platformId;
        page.bad.push(bad);
      }
    });
    if (rows.length >= limit) {
      const last = rows[rows.length - 1]!;
      const w = last['write_date'];
      if (typeof w !== 'string' || !ODOO_DATETIME.test(w)) throw new PlatformError('PLATFORM_BAD_RESPONSE', `odoo: ${model} row ${String(last['id'])} has no write_date to page on`, false);
      page.nextPageToken = encodeOdooToken({ w, i: last['id'] as number });
    }
    this.logger?.debug({ entity, rows: rows.length, records: page.records.length, bad: page.bad.length, more: page.nextPageToken !== undefined }, 'odoo page read');
    return page;
  }

  private async map(entity: Entity, rows: Record<string, unknown>[], companyId: number, signal?: AbortSignal): Promise<Outcome<Entity>[]> {
    if (entity === 'contacts') {
      const persons = await this.persons(rows.map((r) => r['id'] as number), companyId, signal);
      return rows.map((r) => mapPartner(r, companyId, persons.get(r['id'] as number) ?? []));
    }
    if (entity === 'invoices') return rows.map((r) => mapMove(r));
    const memory = this.#memory;
    const previous = memory ? await memory.get('payments', rows.map((r) => String(r['id']))) : new Map<string, SeenPayment>();
    const keep = new Map<string, SeenPayment>();
    const forget: string[] = [];
    const out = rows.map((r) => {
      const id = String(r['id']);
      const mapped = mapPayment(r, previous.get(id));
      if (mapped.kind === 'records' && mapped.link !== undefined) {
        if (mapped.link === null) forget.push(id);
        else keep.set(id, mapped.link);
      }
      return mapped;
    });
    if (memory) {
      await memory.put('payments', keep);
      await memory.forget('payments', forget);
    }
    return out;
  }

  /** The child contacts (`contact` and `invoice` addresses) of these commercial entities, paged 500 a request. */
  private async persons(parents: readonly number[], companyId: number, signal?: AbortSignal): Promise<Map<number, Record<string, unknown>[]>> {
    const out = new Map<number, Record<string, unknown>[]>();
    if (parents.length === 0) return out;
    for (let offset = 0; ; offset += MAX_ODOO_PAGE_SIZE) {
      const rows = await this.rows(
        { model: 'res.partner', method: 'search_read', domain: [['parent_id', 'in', [...parents]], ['type', 'in', ['contact', 'invoice']]], fields: CHILD_FIELDS, limit: MAX_ODOO_PAGE_SIZE, offset, order: 'id asc', context: this.context(companyId) },
        signal,
      );
      for (const row of rows) {
        const parent = Array.isArray(row['parent_id']) ? (row['parent_id'][0] as number) : undefined;
        const person = personFrom(row);
        if (parent === undefined || person === undefined) continue;
        out.set(parent, [...(out.get(parent) ?? []), person]);
      }
      if (rows.length < MAX_ODOO_PAGE_SIZE) return out;
    }
  }

  /** Contacts by id, archived ones too, with their persons (those invoices wait for). */
  async readContacts(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
    const page: Page<'contacts'> = { records: [], bad: [], ordered: false };
    const wanted = [...new Set(ids)].map(Number).filter((n) => Number.isInteger(n) && n > 0);
    const company = await this.company(signal);
    for (let i = 0; i < wanted.length; i += MAX_ODOO_PAGE_SIZE) {
      const chunk = wanted.slice(i, i + MAX_ODOO_PAGE_SIZE);
      const rows = await this.rows({ model: 'res.partner', method: 'search_read', domain: [['id', 'in', chunk], ['active', 'in', [true, false]]], fields: PARTNER_FIELDS, limit: MAX_ODOO_PAGE_SIZE, order: 'id asc', context: this.context(company.id) }, signal);
      const persons = await this.persons(rows.map((r) => r['id'] as number), company.id, signal);
      for (const row of rows) {
        const outcome = mapPartner(row, company.id, persons.get(row['id'] as number) ?? []);
        if (outcome.kind === 'records') page.records.push(...outcome.records);
        else page.bad.push({ entity: 'contacts', place: `odoo:res.partner/${String(row['id'])}`, reason: outcome.reason, ...(outcome.platformId !== undefined ? { platformId: outcome.platformId } : {}) });
      }
    }
    return page;
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}
