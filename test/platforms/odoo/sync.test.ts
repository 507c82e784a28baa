/**
 * End to end, Odoo: the worker (createApp, its queue and sync job, real Redis) syncing a two-company database from the
 * project's Odoo double (fake-odoo.ts) into the collections simulator, over both transports: JSON-RPC as `auto`
 * chooses it for Odoo 17, JSON-2 as it chooses it for Odoo 19. A real Odoo cannot be installed from the registries
 * these machines reach, so the double, written from Odoo's published external API docs, stands in for it.
 */
// First: zod's OpenAPI extension before any schema is made (at aca8b8d a test that builds the app otherwise fails with
// `tenantSchema.openapi is not a function`: src/config/tenants.ts makes its schemas before src/api imports the extension).
import '@hono/zod-openapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRedis, type TestRedis } from '../../helpers/redis.js';
import { startRig, type Rig } from '../../helpers/rig.js';
import { connectionStates } from '../../../src/connect/index.js';
import { dumpPrefix } from '../xero/harness.js';
import { FakeOdoo, odooStamp } from './fake-odoo.js';
import { T0, twoCompanies } from './fixtures.js';

const KEY = 'b1d4f00dcafe5eed0123456789abcdef01234567';

for (const { version, transport } of [
  { version: 17, transport: 'jsonrpc' },
  { version: 19, transport: 'json2' },
] as const) {
  describe(`a two-company Odoo ${version} database over ${transport} (protocol auto)`, () => {
    let redis: TestRedis;
    let odoo: FakeOdoo;
    let rig: Rig;

    beforeAll(async () => {
      redis = await startTestRedis();
      odoo = await FakeOdoo.start({ version, apiKey: KEY });
      twoCompanies(odoo);
      const platform = { kind: 'odoo', url: odoo.url, database: 'acme', username: 'collections-bot', apiKey: KEY };
      rig = await startRig({
        redisUrl: redis.url,
        tenants: [
          { id: 'riyadh', platform: { ...platform, companyId: 1 } },
          { id: 'jeddah', platform: { ...platform, companyId: 2 } },
          { id: 'unnamed', platform },
          // The same company through another address of the server, with a key Odoo no longer takes.
          { id: 'expired', platform: { ...platform, url: odoo.url.replace('127.0.0.1', 'localhost'), companyId: 1, apiKey: 'a-key-past-its-three-months' } },
        ],
        env: { SYNC_PAGE_SIZE: '2' },
      });
    });
    afterAll(async () => {
      await rig?.close();
      await odoo?.close();
      await redis?.stop();
    });

    it('syncs each company exactly: its customers (shared ones in both), posted and cancelled customer invoices, payments of one invoice', async () => {
      const first = await rig.sync('riyadh', 'full');
      expect(first.outcome).toBe('succeeded');
      const second = await rig.sync('jeddah', 'full');
      expect(second.outcome).toBe('succeeded');
      const riyadh = rig.sim.data('client-riyadh');
      const byId = new Map(riyadh.contacts.map((c) => [c.extPlatformId, c]));
      // The vendor (customer_rank 0) is not pushed: no receivable invoice needs it. Each contact once.
      expect([...byId.keys()].sort()).toEqual(['10', '20', '21']);
      expect(riyadh.contacts).toHaveLength(3);
      expect(byId.get('10')).toMatchObject({ name: 'Al-Faisal Contracting', email: 'ap@alfaisal.example', extCompanyId: '1', remindersEnabled: true });
      // The invoice address is a secondary contact; the delivery address is not.
      expect(byId.get('10')!.secondaryContacts?.map((s) => s.name)).toEqual(['Huda Saleh']);
      // Odoo's `false` is absent, never the text "false".
      expect(JSON.stringify(riyadh.contacts)).not.toContain('"false"');
      expect(byId.get('20')!.email ?? null).toBeNull();
      // Archived in Odoo: read anyway, reminders off.
      expect(byId.get('21')).toMatchObject({ remindersEnabled: false });

      const invoices = new Map(riyadh.invoices.map((i) => [i.extPlatformId, i]));
      // Drafts (103), the credit note (104) and the vendor bill (105) are not collected; the cancelled one (102) is
      // pushed stopped (the service has no delete): nothing outstanding, no reminders.
      expect([...invoices.keys()].sort()).toEqual(['100', '101', '102', '106']);
      expect(invoices.get('102')).toMatchObject({ outstandingAmount: 0, remindersEnabled: false });
      expect(invoices.get('100')).toMatchObject({ number: 'INV/2026/00001', total: 1000, outstandingAmount: 500, remindersEnabled: true, dueDate: '2026-10-20', reference: 'PO-7781' });
      expect(invoices.get('101')).toMatchObject({ outstandingAmount: 0 });
      // The payments of one invoice each, `<payment>:<invoice>` (the service has no payment create: they go to the
      // payment ledger and the run's report as unlinked, as every platform's do); the one paying no invoice (303) and
      // the refund paid out (302) are not payments here.
      expect([...(first.unlinkedPayments ?? [])].sort()).toEqual(['300:100', '301:101']);
      expect(first.counts).toMatchObject({ 'contacts.created': 3, 'invoices.created': 4, 'payments.unlinked': 2 });
      const jeddah = rig.sim.data('client-jeddah');
      expect(jeddah.contacts.map((c) => c.extPlatformId).sort()).toEqual(['10', '30']);
      expect(jeddah.invoices.map((i) => i.extPlatformId).sort()).toEqual(['200', '201']);
      expect(second.unlinkedPayments).toEqual(['400:200']);
    });

    it(`reads over ${transport} only, with reading methods only, every listing paged (limit at most 500, ordered on the cursor)`, () => {
      const models = odoo.modelCalls();
      expect(models.length).toBeGreaterThan(10);
      expect(new Set(models.map((c) => c.transport))).toEqual(new Set([transport]));
      expect(new Set(models.map((c) => c.method))).toEqual(new Set(['search_read']));
      for (const c of models) {
        expect(c.limit).toBeGreaterThan(0);
        expect(c.limit).toBeLessThanOrEqual(500);
        expect(['write_date asc, id asc', 'id asc']).toContain(c.order);
      }
      // Service calls: the version once (auto), and over JSON-RPC one authenticate per adapter.
      const service = odoo.calls.filter((c) => c.model === undefined).map((c) => c.method);
      expect(service.every((m) => m === 'version' || m === 'authenticate')).toBe(true);
      expect(service.includes('authenticate')).toBe(transport === 'jsonrpc');
      // Archived customers are asked for; credit notes, drafts and vendor bills never are.
      const partners = models.filter((c) => c.model === 'res.partner' && JSON.stringify(c.domain).includes('is_company'));
      expect(partners.every((c) => JSON.stringify(c.domain).includes('["active","in",[true,false]]'))).toBe(true);
      const moves = models.filter((c) => c.model === 'account.move');
      expect(moves.every((c) => JSON.stringify(c.domain).includes('["move_type","=","out_invoice"]') && JSON.stringify(c.domain).includes('["state","in",["posted","cancel"]]'))).toBe(true);
      // Each company's reads name it.
      expect(moves.every((c) => /\["company_id","=",[12]\]/.test(JSON.stringify(c.domain)))).toBe(true);
    });

    it('incremental by write_date then id: only what changed is read again; an invoice cancelled stops collecting; a customer archived has reminders off', async () => {
      const before = odoo.modelCalls().length;
      const later = T0 + 3_600_000;
      const inv = odoo.data['account.move'].find((m) => m['id'] === 100)!;
      Object.assign(inv, { state: 'cancel', write_date: odooStamp(later) });
      const omar = odoo.data['res.partner'].find((p) => p['id'] === 20)!;
      Object.assign(omar, { active: false, write_date: odooStamp(later) });
      expect((await rig.sync('riyadh', 'incremental')).outcome).toBe('succeeded');
      const riyadh = rig.sim.data('client-riyadh');
      expect(riyadh.invoices.find((i) => i.extPlatformId === '100')).toMatchObject({ outstandingAmount: 0, remindersEnabled: false });
      expect(riyadh.contacts.find((c) => c.extPlatformId === '20')).toMatchObject({ remindersEnabled: false });
      expect(riyadh.contacts).toHaveLength(3);
      const since = odoo.modelCalls().slice(before).filter((c) => c.model !== 'res.company');
      // Each listing asked from the cursor (less the lookback), not from the start.
      for (const c of since.filter((c) => c.order === 'write_date asc, id asc')) expect(JSON.stringify(c.domain)).toMatch(/\["write_date",">=?","2026-10-01 \d\d:\d\d:\d\d"\]/);
    });

    it('a database of several companies and no companyId: the run waits, naming them', async () => {
      const run = await rig.sync('unnamed', 'full');
      expect(run.outcome).toBe('waiting');
      expect(run.errors?.join(' ')).toContain('holds 2 companies: 1 "Riyadh Trading Co.", 2 "Jeddah Branch"');
      expect(rig.sim.data('client-unnamed').contacts).toEqual([]);
    });

    it('a key Odoo refuses: the run fails at once naming what to do (a new key), with no retry of the refused call', async () => {
      const before = odoo.requests.length;
      const run = await rig.sync('expired', 'full');
      expect(run.outcome).toBe('failed');
      expect(run.errors?.join(' ')).toContain('was refused');
      expect(run.errors?.join(' ')).toContain('it needs a new key');
      // The version, then the one refused call (authenticate over JSON-RPC, the first read over JSON-2): no retries.
      expect(odoo.requests.slice(before)).toEqual(transport === 'jsonrpc' ? ['POST /jsonrpc -> 200', 'POST /jsonrpc -> 200'] : ['POST /jsonrpc -> 200', 'POST /json/2/res.company/search_read -> 401']);
      expect(JSON.stringify(run)).not.toContain('a-key-past-its-three-months');
      // Told once across runs: connection.changed, needs_reconnect.
      expect((await rig.sync('expired', 'full')).outcome).toBe('failed');
      const told = (await rig.app.events.page({ limit: 100, tenants: ['expired'], type: 'connection.changed' })).items.map((e) => e.event);
      expect(told.map((e) => [e.type, (e.data as Record<string, unknown>)['state'], (e.data as Record<string, unknown>)['platform']])).toEqual([['connection.changed', 'needs_reconnect', 'odoo']]);
      // connect status: the refused key, the companies to choose from, and a working connection.
      const states = await connectionStates(rig.app.redis, rig.env.KEY_PREFIX, ['expired', 'unnamed', 'riyadh'].map((id) => rig.app.tenant(id)!));
      expect(states.map((r) => [r.tenant, r.platform, r.state])).toEqual([
        ['expired', 'odoo', 'needs_reconnect'],
        ['unnamed', 'odoo', 'awaiting_connection'],
        ['riyadh', 'odoo', 'connected'],
      ]);
      expect(states[0]?.next).toContain('new API key');
      expect(states[1]?.reason).toContain('holds 2 companies: 1 "Riyadh Trading Co.", 2 "Jeddah Branch"');
      expect(JSON.stringify(states)).not.toContain('a-key-past-its-three-months');
      expect(JSON.stringify(told)).not.toContain('a-key-past-its-three-months');
    });

    it('the API key is in no log, run, job or stored key', async () => {
      const everything = [...rig.logs, JSON.stringify(await rig.app.stores.runs.recent('riyadh', 10)), ...(await dumpPrefix(rig.app.redis, rig.env.KEY_PREFIX))].join('\n');
      expect(everything).not.toContain(KEY);
      expect(everything).not.toContain('a-key-past-its-three-months');
    });
  });
}
