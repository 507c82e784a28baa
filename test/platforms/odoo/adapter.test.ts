/**
 * The odoo adapter (the worker's own class, over real HTTP and Redis) against the Odoo double: the transport `auto`
 * picks, Odoo's failures on each transport, paging on (write_date, id), the ORM's conventions, payments undone.
 */
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { PlatformError, PlatformNotConnectedError } from '../../../src/platforms/types.js';
import { odooConfig, type OdooConfig } from '../../../src/platforms/odoo/config.js';
import { OdooAdapter } from '../../../src/platforms/odoo/odoo-adapter.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { capturingLogger, readAll } from '../xero/harness.js';
import { FakeOdoo, odooStamp, type Fault } from './fake-odoo.js';
import { move, partner, pay, T0, twoCompanies } from './fixtures.js';

const KEY = '6578616d706c65206a736f6e20617069206b6579';

describe('odoo adapter against the double', () => {
  const redis = useTestRedis();

  async function setUp(version: number, config: Omit<Partial<OdooConfig>, 'apiKey'> & { apiKey?: string } = {}, fill = true): Promise<{ odoo: FakeOdoo; adapter: OdooAdapter; logs: string[] }> {
    const odoo = await FakeOdoo.start({ version, apiKey: KEY });
    onTestFinished(() => odoo.close());
    if (fill) twoCompanies(odoo);
    const conn = new Redis(redis.url, { maxRetriesPerRequest: 3 });
    const { logger, logs } = capturingLogger();
    const parsed = odooConfig.parse({ kind: 'odoo', url: odoo.url, database: 'acme', username: 'collections-bot', apiKey: KEY, companyId: 1, ...config });
    const adapter = new OdooAdapter({ config: parsed, logger, redis: conn, prefix: testPrefix('odoo'), http: { retryBaseMs: 5, retries: 3 } });
    onTestFinished(async () => {
      await adapter.close();
      conn.disconnect();
    });
    return { odoo, adapter, logs };
  }

  async function failure(p: Promise<unknown>): Promise<PlatformError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PlatformError);
    return err as PlatformError;
  }

  describe('auto: the server version picks the transport', () => {
    it.each([
      [16, 'jsonrpc', ['version', 'authenticate']],
      [18, 'jsonrpc', ['version', 'authenticate']],
      [19, 'json2', ['version']],
      // Odoo 22 has no JSON-RPC: /jsonrpc answers 404 and GET /web/version says 22.
      [22, 'json2', ['version']],
    ] as const)('Odoo %i reads over %s', async (version, transport, service) => {
      const { odoo, adapter } = await setUp(version);
      const page = await adapter.readPage('invoices', {});
      expect(page.records.length).toBe(4);
      expect(adapter.client.transport).toBe(transport);
      expect(adapter.client.version).toBe(version);
      expect(odoo.calls.filter((c) => c.model === undefined).map((c) => c.method)).toEqual(service);
      expect(new Set(odoo.modelCalls().map((c) => c.transport))).toEqual(new Set([transport]));
      if (version === 22) expect(odoo.requests.slice(0, 2)).toEqual(['POST /jsonrpc -> 404', 'GET /web/version -> 200']);
    });

    it('a forced protocol is used as it is (JSON-RPC on 19, still served there though deprecated); Odoo 15 is refused for good', async () => {
      const { odoo, adapter } = await setUp(19, { protocol: 'jsonrpc' });
      await adapter.readPage('contacts', {});
      expect(odoo.calls.some((c) => c.method === 'version')).toBe(false);
      expect(new Set(odoo.modelCalls().map((c) => c.transport))).toEqual(new Set(['jsonrpc']));
      const old = await setUp(15);
      const err = await failure(old.adapter.readPage('contacts', {}));
      expect([err.code, err.retryable, err.message]).toEqual(['PLATFORM_BAD_RESPONSE', false, expect.stringContaining('runs Odoo 15; this worker reads Odoo 16 and later')]);
    });
  });

  describe('failures', () => {
    const NEW_KEY = 'it needs a new key';

    it('JSON-RPC AccessDenied on execute_kw: a new key is needed, no retry, the key in no message or log', async () => {
      const { odoo, adapter, logs } = await setUp(17);
      odoo.fail('accessDenied', 1, (c) => c.method === 'object.execute_kw');
      const err = await failure(adapter.readPage('invoices', {}));
      expect([err.code, err.retryable]).toEqual(['PLATFORM_AUTH_FAILED', false]);
      expect(err.message).toContain(NEW_KEY);
      expect(err.message).toContain('odoo.exceptions.AccessDenied');
      expect(odoo.requests.filter((r) => r.startsWith('POST /jsonrpc'))).toHaveLength(3); // version, authenticate, the one refused call
      expect([err.message, ...logs].join('\n')).not.toContain(KEY);
    });

    it('JSON-RPC authenticate answering false: a new key is needed', async () => {
      const { odoo, adapter } = await setUp(17);
      odoo.fail('authenticateFalse', 1, (c) => c.method === 'common.authenticate');
      const err = await failure(adapter.readPage('contacts', {}));
      expect([err.code, err.retryable, err.message]).toEqual(['PLATFORM_AUTH_FAILED', false, expect.stringContaining('authenticate answered false')]);
      expect(odoo.modelCalls()).toEqual([]);
    });

    it('JSON-2 401 Invalid apikey (a key expired or revoked): a new key is needed, no retry; a rotated key then works', async () => {
      const { odoo, adapter, logs } = await setUp(19);
      odoo.apiKeys.clear();
      odoo.apiKeys.add('the-new-key');
      const err = await failure(adapter.readPage('contacts', {}));
      expect([err.code, err.retryable]).toEqual(['PLATFORM_AUTH_FAILED', false]);
      expect(err.message).toContain('answered 401 Invalid apikey');
      expect(odoo.requests.filter((r) => r.startsWith('POST /json/2'))).toEqual(['POST /json/2/res.company/search_read -> 401']);
      expect([err.message, ...logs].join('\n')).not.toContain(KEY);
      // Rotation without a gap (docs/odoo.md): both keys valid while the tenants file moves to the new one.
      const rotated = await setUp(19, { apiKey: 'the-new-key' });
      rotated.odoo.apiKeys.add('the-new-key');
      expect((await rotated.adapter.readPage('contacts', {})).records.length).toBeGreaterThan(0);
    });

    it.each([17, 19])('Odoo %i: ValueError about our request fails for good with its message, not retried', async (version) => {
      const { odoo, adapter } = await setUp(version);
      odoo.fail('valueError', 1, (c) => c.method === 'object.execute_kw' || c.method === 'search_read');
      const err = await failure(adapter.readPage('contacts', {}));
      expect([err.code, err.retryable]).toEqual(['PLATFORM_BAD_RESPONSE', false]);
      expect(err.message).toContain("builtins.ValueError: Invalid field 'x_studio_region' on model 'res.company'");
      expect(odoo.modelCalls().map((c) => c.outcome)).toEqual(['builtins.ValueError']);
    });

    it.each([
      [17, 502],
      [17, 'reset'],
      [19, 503],
      [19, 504],
      [19, 'reset'],
    ] as [number, Fault][])('Odoo %i: %s from the proxy in front (HTML) is retried by the retry policy, then read', async (version, fault) => {
      const { odoo, adapter } = await setUp(version);
      odoo.fail(fault, 2, (c) => c.method !== 'version' && c.method !== 'common.version' && c.method !== 'common.authenticate');
      const page = await adapter.readPage('invoices', {});
      expect(page.records.length).toBe(4);
      const failed = odoo.requests.filter((r) => r.endsWith(`-> ${fault}`));
      expect(failed).toHaveLength(2);
    });

    it('a 503 that lasts past the retries: PLATFORM_UNAVAILABLE, retryable (the run is retried later)', async () => {
      const { odoo, adapter } = await setUp(19);
      odoo.fail(503, 10, (c) => c.transport === 'json2');
      const err = await failure(adapter.readPage('invoices', {}));
      expect([err.code, err.retryable]).toEqual(['PLATFORM_UNAVAILABLE', true]);
      expect(err.message).toContain('answered 503 (not Odoo: its proxy)');
      expect(odoo.requests.filter((r) => r.endsWith('-> 503'))).toHaveLength(4);
    });

    it.each([17, 19])('Odoo %i: a database that does not exist is named', async (version) => {
      const { adapter } = await setUp(version, { database: 'acme-prod' });
      const err = await failure(adapter.readPage('contacts', {}));
      expect([err.code, err.retryable]).toEqual(['PLATFORM_BAD_RESPONSE', false]);
      expect(err.message).toContain('the database "acme-prod" does not exist at http://127.0.0.1');
    });
  });

  describe('companies', () => {
    it('several and no companyId: PLATFORM_NOT_CONNECTED (the run waits) naming each; a companyId the user cannot read names those it can', async () => {
      const { adapter } = await setUp(19, { companyId: undefined });
      const err = await failure(adapter.readPage('contacts', {}));
      expect(err).toBeInstanceOf(PlatformNotConnectedError);
      expect(err.message).toContain('holds 2 companies: 1 "Riyadh Trading Co.", 2 "Jeddah Branch"');
      const wrong = await setUp(19, { companyId: 9 });
      const e2 = await failure(wrong.adapter.readPage('contacts', {}));
      expect([e2.code, e2.retryable]).toEqual(['PLATFORM_BAD_RESPONSE', false]);
      expect(e2.message).toContain('companyId 9 is not a company the bot user can read');
    });

    it('one company and no companyId: that one', async () => {
      const { odoo, adapter } = await setUp(17, { companyId: undefined });
      odoo.data['res.company'].splice(1);
      const page = await adapter.readPage('invoices', {});
      expect(page.records.map((r) => r.id)).toEqual(['100', '101', '102', '106']);
    });
  });

  describe('reading', () => {
    it('pages 1 100 invoices, 600 of them stamped the same second, at most 500 a request, each once, keyset on (write_date, id)', async () => {
      const { odoo, adapter } = await setUp(19, {}, false);
      odoo.data['res.company'].push({ id: 1, name: 'Riyadh Trading Co.', write_date: odooStamp(T0) });
      for (let i = 1; i <= 1100; i += 1) odoo.data['account.move'].push(move(1000 + i, `INV/${i}`, [10, 'Al-Faisal'], i <= 600 ? 0 : i));
      const all = await readAll(adapter, 'invoices', { pageSize: 5000 });
      expect(all.records).toHaveLength(1100);
      expect(new Set(all.records.map((r) => r.id)).size).toBe(1100);
      const reads = odoo.modelCalls().filter((c) => c.model === 'account.move');
      expect(reads.map((c) => c.limit)).toEqual([500, 500, 500]);
      expect(reads[1]!.domain!.slice(0, 5)).toEqual(['|', ['write_date', '>', odooStamp(T0)], '&', ['write_date', '=', odooStamp(T0)], ['id', '>', 1500]]);
    });

    it('incremental: write_date at or after `since` (whole seconds, naive UTC)', async () => {
      const { odoo, adapter } = await setUp(17);
      const page = await adapter.readPage('invoices', { since: { updatedAt: new Date(T0 + 101_500).toISOString(), id: '' } });
      expect(page.records.map((r) => r.id)).toEqual(['101', '102', '106']);
      expect(odoo.modelCalls().at(-1)!.domain![0]).toEqual(['write_date', '>=', '2026-10-01 05:01:41']);
      expect(page.records[0]!.updatedAt).toBe('2026-10-01T05:01:41.000Z');
    });

    it("contacts: commercial entities only, archived too; `false` is absent (never \"false\"); a row without a name is a bad record", async () => {
      const { odoo, adapter } = await setUp(19);
      odoo.data['res.partner'].push(partner(50, '', 50, { name: false }));
      const page = await adapter.readPage('contacts', {});
      expect(page.records.map((r) => r.id).sort()).toEqual(['10', '20', '21', '40']);
      const byId = new Map(page.records.map((r) => [r.id, r]));
      expect(byId.get('10')).toMatchObject({ companyId: '1', street: 'King Fahd Road, Tower 2', city: 'Riyadh', postalCode: '12211', country: 'Saudi Arabia', vatNumber: '300123456700003', phoneNumber: '+966 11 465 0000', customer: true, deleted: false, persons: [{ id: '11', name: 'Huda Saleh', email: 'huda@alfaisal.example' }] });
      expect(Object.keys(byId.get('20')!).filter((k) => k === 'email' || k === 'phoneNumber')).toEqual([]);
      expect(byId.get('21')).toMatchObject({ deleted: true });
      expect(byId.get('40')).toMatchObject({ customer: false });
      expect(JSON.stringify(page.records)).not.toMatch(/"false"/);
      expect(page.bad).toEqual([expect.objectContaining({ entity: 'contacts', platformId: '50', reason: 'name: required' })]);
      // Held-back contacts by id, archived ones too.
      const held = await adapter.readContacts(['21', '30']);
      expect(held.records.map((r) => [r.id, r.deleted])).toEqual([['21', true], ['30', false]]);
    });

    it('payments: the link to the one invoice paid; a payment later cancelled or moved to another invoice yields the old link deleted', async () => {
      const { odoo, adapter } = await setUp(17);
      expect((await adapter.readPage('payments', {})).records.map((r) => [r.id, r.amount, r.deleted])).toEqual([
        ['300:100', 500, false],
        ['301:101', 1200, false],
      ]);
      const later = odooStamp(T0 + 3_600_000);
      Object.assign(odoo.data['account.payment'].find((p) => p['id'] === 300)!, { state: 'cancel', reconciled_invoice_ids: [], write_date: later });
      Object.assign(odoo.data['account.payment'].find((p) => p['id'] === 301)!, { reconciled_invoice_ids: [106], write_date: later });
      odoo.data['account.payment'].push(pay(305, 'PBNK1/2026/00009', 90, [100, 106], T0 / 1000 + 3600));
      const since = { updatedAt: new Date(T0 + 3_000_000).toISOString(), id: '' };
      expect((await adapter.readPage('payments', { since })).records.map((r) => [r.id, r.amount, r.deleted])).toEqual([
        ['300:100', 500, true],
        ['301:101', 1200, true],
        ['301:106', 1200, false],
      ]);
    });
  });
});
