/**
 * Odoo, requests per record: a first sync of a database whose company 1 has `customers` customers (each with an
 * invoice address, 2-4 customer invoices, receipts of the paid ones; a second company, vendors, bills and credit notes
 * beside them, which are not read), then an incremental after a small change, over each transport, through the
 * project's Odoo double (test/platforms/odoo/fake-odoo.ts, imported as the zoho section imports its double) into the
 * simulator. Odoo has no published request limit for the external API, so the figure is requests, not wall time.
 *
 * Minimal requests: the server's version (auto), `authenticate` (JSON-RPC), the companies, and for each listing its
 * pages of `pageSize` (500 at most a request) plus the empty page that ends it when the last is full; contacts add
 * one read of their child contacts a page.
 *
 * In this process: an App with its sync worker (the real processor), its one tenant an odoo tenant of company 1.
 */
import { createApp, type App } from '../../src/app.js';
import { loadEnv } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';
import { createLogger } from '../../src/logger.js';
import { requestSync, type SyncMode } from '../../src/queues/index.js';
import { prng } from '../../src/sample/generate.js';
import { waitForRun, type RunRecord } from '../../src/state/index.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { FakeOdoo, odooStamp, type Row } from '../../test/platforms/odoo/fake-odoo.js';
import { move, partner, pay } from '../../test/platforms/odoo/fixtures.js';
import { assertSucceeded, clientIdOf, type Bench } from '../harness.js';

export interface OdooBenchConfig {
  customers: number;
  changedCustomers: number;
  changedInvoices: number;
  /** SYNC_PAGE_SIZE: the adapter asks for this many rows a request (500 at most). */
  pageSize: number;
  syncConcurrency: number;
  runTimeoutMs: number;
}

export interface OdooSyncRow {
  what: 'first' | 'incremental';
  /** Odoo rows the sync carried: customers (with their child contacts), invoices, payments (incremental: the changed). */
  records: number;
  requests: number;
  byCall: Record<string, number>;
  requestsPerRecord: number;
  minimalRequests: number;
  ratioToMinimal: number;
  wallMs: number;
  outcome: string;
  landed: { contacts: number; invoices: number };
}

export interface OdooTransportResult {
  transport: 'jsonrpc' | 'json2';
  version: number;
  first: OdooSyncRow;
  incremental: OdooSyncRow;
}

export interface OdooBenchResult {
  config: OdooBenchConfig;
  data: { customers: number; invoices: number; payments: number };
  transports: OdooTransportResult[];
}

const TENANT = 'odoo-bench';
const KEY = 'bench-odoo-key-5f0c1e6a9d2b4c8e7a1f3b5d';
const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/** Company 1's customers with their invoices and receipts, and what is beside them; stamps over the last 30 days. */
function seed(odoo: FakeOdoo, customers: number, now: number): OdooBenchResult['data'] {
  const draw = prng(20261202);
  odoo.data['res.company'].push({ id: 1, name: 'Bench Trading Co.', write_date: odooStamp(now) }, { id: 2, name: 'Bench Branch', write_date: odooStamp(now) });
  const partners: Row[] = [];
  const moves: Row[] = [];
  const payments: Row[] = [];
  let nextMove = 100_000;
  let nextPay = 500_000;
  for (let c = 1; c <= customers; c += 1) {
    const id = 1_000 + c * 10;
    const name = `Customer ${c}`;
    partners.push(partner(id, name, 0, { company_id: [1, 'Bench Trading Co.'], email: `ap${c}@example.com` }), partner(id + 1, `Accounts ${c}`, 0, { is_company: false, parent_id: [id, name], commercial_partner_id: [id, name], type: 'invoice', email: `acc${c}@example.com` }));
    const n = 2 + Math.floor(draw() * 3);
    for (let k = 0; k < n; k += 1) {
      const total = 500 + Math.floor(draw() * 40) * 50;
      const paid = draw() < 1 / 3;
      const mid = (nextMove += 1);
      moves.push(move(mid, `INV/2026/${mid}`, [id, name], 0, { amount_total: total, amount_residual: paid ? 0 : total }));
      if (paid) payments.push(pay((nextPay += 1), `PBNK1/2026/${nextPay}`, total, [mid], 0));
    }
  }
  // Beside them, never read for company 1: the other company's customers and invoices, vendors and their bills, credit notes.
  const beside: Row[] = [];
  for (let c = 1; c <= 20; c += 1) {
    beside.push(partner(90_000 + c, `Branch customer ${c}`, 0, { company_id: [2, 'Bench Branch'] }));
    moves.push(move((nextMove += 1), `INV/B/${c}`, [90_000 + c, `Branch customer ${c}`], 0, { company_id: [2, 'Bench Branch'] }));
    moves.push(move((nextMove += 1), `BILL/${c}`, [1_010, 'Customer 1'], 0, { move_type: 'in_invoice' }));
    moves.push(move((nextMove += 1), `RINV/${c}`, [1_010, 'Customer 1'], 0, { move_type: 'out_refund', amount_total: 100, amount_residual: 100 }));
  }
  const all = [...partners, ...beside, ...moves, ...payments];
  const from = now - 30 * 86_400_000;
  const step = Math.max(1_000, Math.floor((29 * 86_400_000) / all.length / 1000) * 1000);
  all.forEach((r, i) => (r['write_date'] = odooStamp(from + i * step)));
  odoo.data['res.partner'].push(...partners, ...beside);
  odoo.data['account.move'].push(...moves);
  odoo.data['account.payment'].push(...payments);
  const own = moves.filter((m) => m['move_type'] === 'out_invoice' && (m['company_id'] as [number, string])[0] === 1).length;
  return { customers, invoices: own, payments: payments.length };
}

function countSince(odoo: FakeOdoo, fromRequest: number, fromCall: number): { requests: number; byCall: Record<string, number> } {
  const byCall: Record<string, number> = {};
  for (const c of odoo.calls.slice(fromCall)) {
    const k = c.model === undefined ? c.method : `${c.model}.${c.method}`;
    byCall[k] = (byCall[k] ?? 0) + 1;
  }
  return { requests: odoo.requests.length - fromRequest, byCall };
}

export async function runOdooSection(bench: Bench, cfg: OdooBenchConfig): Promise<OdooBenchResult> {
  const transports: OdooTransportResult[] = [];
  let data: OdooBenchResult['data'] | undefined;
  for (const { version, transport } of [
    { version: 17, transport: 'jsonrpc' },
    { version: 19, transport: 'json2' },
  ] as const) {
    const odoo = await FakeOdoo.start({ version, apiKey: KEY });
    data = seed(odoo, cfg.customers, Date.now() - 3_600_000);
    const env = loadEnv({
      REDIS_URL: bench.redis.url,
      KEY_PREFIX: `{bench-odoo-${transport}-${Date.now()}}`,
      COLLECTIONS_BASE_URL: bench.sim.baseUrl,
      COLLECTIONS_AUTH_URL: bench.sim.authUrl,
      LOG_LEVEL: 'warn',
      SYNC_CONCURRENCY: String(cfg.syncConcurrency),
      SYNC_PAGE_SIZE: String(cfg.pageSize),
      HTTP_REQUEST_TIMEOUT_MS: '10000',
    });
    const tenant = `${TENANT}-${transport}`;
    bench.sim.setClient(clientIdOf(tenant), `secret-${tenant}`);
    bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
    const platform = { kind: 'odoo', url: odoo.url, database: 'acme', username: 'collections-bot', apiKey: KEY, companyId: 1 };
    const file = parseTenants(JSON.stringify({ tenants: [{ id: tenant, collections: { clientId: clientIdOf(tenant), clientSecret: `secret-${tenant}` }, platform }] }), {});
    let app: App | undefined;
    let worker: RunningWorker | undefined;
    try {
      app = await createApp({ env, tenants: file, logger: createLogger({ level: 'warn' }), role: 'worker' });
      const a = app;
      worker = await startWorker(a, { queues: ['sync', 'refreshToken'], schedules: false, opsPort: 0 });
      const sync = async (mode: SyncMode): Promise<{ run: RunRecord; wallMs: number }> => {
        const t0 = performance.now();
        const { requestedAt } = await requestSync(a.queues.sync, tenant, mode, { trigger: 'cli' });
        const run = await waitForRun(a.stores.runs, tenant, { mode, requestedAt, timeoutMs: cfg.runTimeoutMs, pollMs: 50 });
        return { run, wallMs: performance.now() - t0 };
      };
      const row = (what: OdooSyncRow['what'], records: number, minimal: number, counted: { requests: number; byCall: Record<string, number> }, s: { run: RunRecord; wallMs: number }): OdooSyncRow => {
        const d = bench.sim.data(clientIdOf(tenant));
        return { what, records, requests: counted.requests, byCall: counted.byCall, requestsPerRecord: round(counted.requests / records), minimalRequests: minimal, ratioToMinimal: round(counted.requests / minimal, 2), wallMs: Math.round(s.wallMs), outcome: s.run.outcome ?? 'unfinished', landed: { contacts: d.contacts.length, invoices: d.invoices.length } };
      };
      const describe = (r: OdooSyncRow): string => `${r.requests} requests (${Object.entries(r.byCall).map(([k, v]) => `${k} ${v}`).join(', ')}) for ${r.records} records: ${r.requestsPerRecord} a record, minimal ${r.minimalRequests} (x${r.ratioToMinimal}); ${(r.wallMs / 1000).toFixed(1)} s; landed ${r.landed.contacts} contacts, ${r.landed.invoices} invoices`;
      const pages = (n: number): number => Math.floor(n / Math.min(cfg.pageSize, 500)) + 1;
      // version (+ authenticate) + companies + contacts' pages and their children + invoices' pages + payments' pages.
      const fixed = transport === 'jsonrpc' ? 3 : 2;

      let mark = { requests: odoo.requests.length, calls: odoo.calls.length };
      const first = await sync('full');
      assertSucceeded(first.run, `odoo ${transport} first sync`);
      const firstRecords = data.customers * 2 + data.invoices + data.payments;
      const firstRow = row('first', firstRecords, fixed + 2 * pages(data.customers) + pages(data.invoices) + pages(data.payments), countSince(odoo, mark.requests, mark.calls), first);
      bench.log(`  ${transport} (Odoo ${version}) first sync: ${describe(firstRow)}`);

      const draw = prng(42);
      const pick = <T>(xs: readonly T[], n: number): T[] => {
        const pool = [...xs];
        const out: T[] = [];
        while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(draw() * pool.length), 1)[0]!);
        return out;
      };
      const now = odooStamp(Date.now() - 2_000);
      for (const p of pick(odoo.data['res.partner'].filter((r) => r['is_company'] === true && (r['company_id'] as [number, string])[0] === 1), cfg.changedCustomers)) Object.assign(p, { name: `${String(p['name'])} (renamed)`, write_date: now });
      for (const m of pick(odoo.data['account.move'].filter((r) => r['move_type'] === 'out_invoice' && Number(r['amount_residual']) > 100 && (r['company_id'] as [number, string])[0] === 1), cfg.changedInvoices)) {
        Object.assign(m, { amount_residual: Number(m['amount_residual']) - 100, payment_state: 'partial', write_date: now });
      }
      mark = { requests: odoo.requests.length, calls: odoo.calls.length };
      const incremental = await sync('incremental');
      assertSucceeded(incremental.run, `odoo ${transport} incremental sync`);
      // The adapter (and so its version and uid) is kept between runs: contacts and their children, invoices, payments.
      const incRow = row('incremental', cfg.changedCustomers + cfg.changedInvoices, 4, countSince(odoo, mark.requests, mark.calls), incremental);
      bench.log(`  ${transport} incremental (${cfg.changedCustomers} customers, ${cfg.changedInvoices} invoices changed): ${describe(incRow)}`);
      transports.push({ transport, version, first: firstRow, incremental: incRow });
    } finally {
      await worker?.close(10_000);
      await app?.close();
      await odoo.close();
    }
  }
  return { config: cfg, data: data!, transports };
}
