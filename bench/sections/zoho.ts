/**
 * Zoho Books against its limit: a first sync of an organisation of `customers` customers (each with a few invoices and
 * some payments, seeded) and an incremental sync after a small change, through the project's Zoho double
 * (test/platforms/zoho-books/fake-zoho.ts, imported as bench/harness.ts imports test/helpers) into the simulator.
 * Figures: requests to Zoho per record and against the minimal count (listing pages of 200, plus the one detail read
 * per payment Zoho makes unavoidable: only a payment's detail names its invoices), and wall time against the floor
 * the organisation's per-minute limit sets (minimal requests / the limit).
 *
 * The limit: Zoho's is 100 calls a minute per organisation (and 10 in flight). To keep the bench short the run may
 * use `limitScale` x 100 a minute; the double and the adapter's shared limiter are then both given that limit, and
 * the floor is computed against it (the section's output names it). The minute stays 60 s: the limiter's sliding log
 * is on Redis's clock, so time cannot be scaled, only the count.
 *
 * In this process: an App with its sync worker (the real processor: run records, checkpoints, rescheduling after a
 * limit), its one tenant a zoho-books tenant with a refresh token and organizationId. The tenant's adapter is the
 * ZohoBooksAdapter as module.ts builds it, plus `limits` (the adapter's own option; the tenants file has no field
 * for it), given through the App's `adapterFor`, which the processor calls for every run.
 */
import { randomBytes } from 'node:crypto';
import { createApp, type App } from '../../src/app.js';
import { loadEnv } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';
import { createLogger } from '../../src/logger.js';
import { ZohoBooksAdapter } from '../../src/platforms/zoho-books/zoho-books-adapter.js';
import { zohoBooksOAuth } from '../../src/platforms/zoho-books/oauth.js';
import type { ZohoBooksConfig } from '../../src/platforms/zoho-books/config.js';
import { requestSync, type SyncMode } from '../../src/queues/index.js';
import { prng } from '../../src/sample/generate.js';
import { waitForRun, type RunRecord } from '../../src/state/index.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { FakeZoho, zohoStamp, type ZohoObject } from '../../test/platforms/zoho-books/fake-zoho.js';
import { contact, invoice, payment } from '../../test/platforms/zoho-books/fixtures.js';
import { assertSucceeded, clientIdOf, type Bench } from '../harness.js';

export interface ZohoConfig {
  customers: number;
  /** Customers and invoices modified before the incremental sync. */
  changedCustomers: number;
  changedInvoices: number;
  /** The run's per-minute limit is ZOHO_PER_MINUTE x this, in the double and in the adapter's limiter alike. */
  limitScale: number;
  /** The double's time per API call. */
  latencyMs: number;
  syncConcurrency: number;
  /** A run not done by then fails the section (a run that never ends is a finding, not a hang). */
  runTimeoutMs: number;
}

/** Zoho Books' published limit per organisation. */
export const ZOHO_PER_MINUTE = 100;
const ZOHO_IN_FLIGHT = 10;
const PAGE = 200;
const ORG = '10234695';
const TENANT = 'zoho-bench';

export interface ZohoRequests {
  /** API calls answered (429s included), by kind: `contacts` (listing pages), `contacts/{id}` (details), ... */
  byKind: Record<string, number>;
  total: number;
  throttled: number;
  tokenCalls: number;
}

export interface ZohoSyncRow {
  what: 'first' | 'incremental';
  /** Zoho objects the sync had to carry: customers, invoices and payments (first: all; incremental: the changed). */
  records: number;
  requests: ZohoRequests;
  requestsPerRecord: number;
  /** Listing pages of 200 per collection (at least one each) plus one detail per payment listed as changed. */
  minimalRequests: number;
  minimalBreakdown: string;
  /** requests.total / minimalRequests. */
  ratioToMinimal: number;
  wallMs: number;
  /** The run's own time (its start to its end, queueing left out), as recorded. */
  runMs: number;
  /** minimalRequests / limit per minute. */
  floorMs: number;
  /** wallMs / floorMs. */
  wallToFloor: number;
  outcome: string;
  /** What the simulator holds for the tenant after the run. */
  landed: { contacts: number; invoices: number; payments: number };
}

export interface ZohoResult {
  config: ZohoConfig;
  /** The per-minute limit the run used (double and adapter): ZOHO_PER_MINUTE x limitScale. */
  perMinute: number;
  inFlight: number;
  data: { customers: number; invoices: number; payments: number; owing: number };
  first: ZohoSyncRow;
  incremental: ZohoSyncRow;
}

interface Seeded {
  customers: number;
  invoices: number;
  payments: number;
  owing: number;
}

/**
 * `customers` customers, 2-4 invoices each (a third paid, a sixth partly), 0-2 payments each on its paid or partly
 * paid invoices; stamps spread over the 30 days before `now` (contacts, then invoices, then payments), one second
 * apart at least, so the incremental's lookback finds next to nothing of them.
 */
function seed(zoho: FakeZoho, customers: number, now: number): Seeded {
  const draw = prng(20261202);
  const contacts: ZohoObject[] = [];
  const invoices: ZohoObject[] = [];
  const payments: ZohoObject[] = [];
  let owing = 0;
  for (let c = 1; c <= customers; c += 1) {
    const cid = `C${String(c).padStart(4, '0')}`;
    const n = 2 + Math.floor(draw() * 3);
    let balance = 0;
    const paidLines: Record<string, number>[] = [];
    for (let k = 1; k <= n; k += 1) {
      const iid = `${cid}-I${k}`;
      const total = 500 + Math.floor(draw() * 40) * 50;
      const kind = draw();
      if (kind < 1 / 3) {
        invoices.push(invoice(iid, cid, 0, { status: 'paid', total, balance: 0 }));
        paidLines.push({ [iid]: total });
      } else if (kind < 0.5) {
        invoices.push(invoice(iid, cid, 0, { status: 'partially_paid', total, balance: total - 200 }));
        paidLines.push({ [iid]: 200 });
        balance += total - 200;
      } else {
        invoices.push(invoice(iid, cid, 0, { status: 'sent', total, balance: total }));
        balance += total;
      }
    }
    for (const [j, lines] of paidLines.slice(0, 2).entries()) payments.push(payment(`${cid}-P${j + 1}`, cid, 0, lines));
    if (balance > 0) owing += 1;
    contacts.push(contact(cid, 0, { outstanding_receivable_amount: balance }));
  }
  // Stamps in order over the last 30 days (an hour before now at the latest): contacts, invoices, payments.
  const all = [...contacts, ...invoices, ...payments];
  const from = now - 30 * 86_400_000;
  const step = Math.max(1_000, Math.floor((29 * 86_400_000) / all.length / 1000) * 1000);
  all.forEach((o, i) => (o['last_modified_time'] = zohoStamp(from + i * step)));
  zoho.data.contacts.push(...contacts);
  zoho.data.invoices.push(...invoices);
  zoho.data.customerpayments.push(...payments);
  return { customers: contacts.length, invoices: invoices.length, payments: payments.length, owing };
}

function kindOf(path: string): string {
  const m = /^\/(contacts|invoices|customerpayments)(\/.+)?$/.exec(path);
  if (!m) return path;
  return m[2] === undefined ? m[1]! : `${m[1]!}/{id}`;
}

function requestsSince(zoho: FakeZoho, from: { api: number; token: number }): ZohoRequests {
  const byKind: Record<string, number> = {};
  let throttled = 0;
  const calls = zoho.requests.slice(from.api);
  for (const r of calls) {
    const k = kindOf(r.path);
    byKind[k] = (byKind[k] ?? 0) + 1;
    if (r.status === 429) throttled += 1;
  }
  return { byKind, total: calls.length, throttled, tokenCalls: zoho.tokenCalls.length - from.token };
}

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const pages = (n: number): number => Math.max(1, Math.ceil(n / PAGE));

export async function runZohoSection(bench: Bench, cfg: ZohoConfig): Promise<ZohoResult> {
  const perMinute = ZOHO_PER_MINUTE * cfg.limitScale;
  const zoho = await FakeZoho.start({
    clientId: '1000.ZOHOBENCH',
    clientSecret: 'zoho-bench-secret',
    organizations: [{ organization_id: ORG, name: 'Bench Trading Co.' }],
    userDc: 'eu',
    perMinute,
    concurrent: ZOHO_IN_FLIGHT,
    ...(cfg.latencyMs > 0 ? { apiDelayMs: cfg.latencyMs } : {}),
  });
  const data = seed(zoho, cfg.customers, Date.now() - 3_600_000);
  bench.log(`  organisation: ${data.customers} customers (${data.owing} owing), ${data.invoices} invoices, ${data.payments} payments; limit ${perMinute}/min (${ZOHO_PER_MINUTE} x ${cfg.limitScale}), ${ZOHO_IN_FLIGHT} in flight, ${cfg.latencyMs} ms a call`);

  const env = loadEnv({
    REDIS_URL: bench.redis.url,
    KEY_PREFIX: `{bench-zoho-${Date.now()}}`,
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    PLATFORM_TOKEN_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    SYNC_CONCURRENCY: String(cfg.syncConcurrency),
    HTTP_REQUEST_TIMEOUT_MS: '10000',
  });
  bench.sim.setClient(clientIdOf(TENANT), `secret-${TENANT}`);
  bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
  const platform = { kind: 'zoho-books', clientId: '1000.ZOHOBENCH', clientSecret: 'zoho-bench-secret', dataCenter: 'eu', organizationId: ORG, refreshToken: zoho.issueRefreshToken('eu'), accountsUrl: zoho.accounts('eu') };
  const file = parseTenants(JSON.stringify({ tenants: [{ id: TENANT, collections: { clientId: clientIdOf(TENANT), clientSecret: `secret-${TENANT}` }, platform }] }), {});
  const logger = createLogger({ level: 'warn' });
  let app: App | undefined;
  let worker: RunningWorker | undefined;
  let adapter: ZohoBooksAdapter | undefined;
  try {
    app = await createApp({ env, tenants: file, logger, role: 'worker' });
    const a = app;
    // The adapter as module.ts builds it for a tenant with organizationId, with the run's limit given.
    const config = a.tenant(TENANT)!.platform as ZohoBooksConfig;
    adapter = new ZohoBooksAdapter({
      redis: a.redis,
      prefix: env.KEY_PREFIX,
      tokenKey: a.tokenBox!,
      config,
      organizationId: ORG,
      logger: logger.child({ tenant: TENANT, platform: 'zoho-books' }),
      // The adapter keeps its own headroom under Zoho's limit (zoho-books/oauth.ts), scaled like the double's.
      limits: { ...zohoBooksOAuth.limits, perMinute: zohoBooksOAuth.limits.perMinute * cfg.limitScale, concurrent: ZOHO_IN_FLIGHT },
    });
    const zohoAdapter = adapter;
    const builtIn = a.adapterFor.bind(a);
    a.adapterFor = (t) => (t.id === TENANT ? zohoAdapter : builtIn(t));
    worker = await startWorker(a, { queues: ['sync', 'refreshToken'], schedules: false, opsPort: 0 });

    const sync = async (mode: SyncMode): Promise<{ run: RunRecord; wallMs: number }> => {
      const t0 = performance.now();
      const { requestedAt } = await requestSync(a.queues.sync, TENANT, mode, { trigger: 'cli' });
      const run = await waitForRun(a.stores.runs, TENANT, { mode, requestedAt, timeoutMs: cfg.runTimeoutMs, pollMs: 50 });
      return { run, wallMs: performance.now() - t0 };
    };
    const landed = (): ZohoSyncRow['landed'] => {
      const d = bench.sim.data(clientIdOf(TENANT));
      return { contacts: d.contacts.length, invoices: d.invoices.length, payments: d.payments.length };
    };
    const row = (what: ZohoSyncRow['what'], records: number, requests: ZohoRequests, minimal: { n: number; breakdown: string }, s: { run: RunRecord; wallMs: number }): ZohoSyncRow => {
      const floorMs = (minimal.n / perMinute) * 60_000;
      return {
        what,
        records,
        requests,
        requestsPerRecord: round(requests.total / records, 3),
        minimalRequests: minimal.n,
        minimalBreakdown: minimal.breakdown,
        ratioToMinimal: round(requests.total / minimal.n),
        wallMs: Math.round(s.wallMs),
        runMs: (s.run.finishedAt ?? Date.now()) - s.run.startedAt,
        floorMs: Math.round(floorMs),
        wallToFloor: round(s.wallMs / floorMs),
        outcome: s.run.outcome ?? 'unfinished',
        landed: landed(),
      };
    };
    const describe = (r: ZohoSyncRow): string =>
      `${r.requests.total} requests (${Object.entries(r.requests.byKind).map(([k, v]) => `${k} ${v}`).join(', ')}; ${r.requests.throttled} answered 429; ${r.requests.tokenCalls} token calls) for ${r.records} records: ${r.requestsPerRecord} a record, minimal ${r.minimalRequests} (x${r.ratioToMinimal}); wall ${(r.wallMs / 1000).toFixed(1)} s, floor ${(r.floorMs / 1000).toFixed(1)} s at ${perMinute}/min (x${r.wallToFloor})`;

    // (a) First sync.
    let mark = { api: zoho.requests.length, token: zoho.tokenCalls.length };
    const first = await sync('full').catch((err: unknown) => {
      const r = requestsSince(zoho, mark);
      bench.log(`  first sync did not end: ${r.total} requests so far (${Object.entries(r.byKind).map(([k, v]) => `${k} ${v}`).join(', ')}; ${r.throttled} answered 429)`);
      throw err;
    });
    assertSucceeded(first.run, 'zoho first sync');
    const firstRecords = data.customers + data.invoices + data.payments;
    const firstMinimal = {
      n: pages(data.customers) + pages(data.invoices) + pages(data.payments) + data.payments,
      breakdown: `${pages(data.customers)} + ${pages(data.invoices)} + ${pages(data.payments)} listing pages + ${data.payments} payment details`,
    };
    const firstRow = row('first', firstRecords, requestsSince(zoho, mark), firstMinimal, first);
    bench.log(`  first sync: ${describe(firstRow)}`);

    // (b) Incremental after a small change: customers renamed, invoices part-paid, stamped now. A scheduled run comes
    // minutes after the last; when the first sync's calls could still fill this minute, the run waits until they leave it.
    const spent = firstRow.requests.total;
    if (spent + 50 > perMinute) {
      bench.log('  waiting 61 s: the first sync\'s calls leave the organisation\'s minute before the incremental');
      await new Promise((r) => setTimeout(r, 61_000));
    }
    const draw = prng(42);
    const pick = <T>(xs: readonly T[], n: number): T[] => {
      const pool = [...xs];
      const out: T[] = [];
      while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(draw() * pool.length), 1)[0]!);
      return out;
    };
    const now = Date.now() - 2_000;
    for (const c of pick(zoho.data.contacts, cfg.changedCustomers)) {
      c['contact_name'] = `${String(c['contact_name'])} (renamed)`;
      c['last_modified_time'] = zohoStamp(now);
    }
    for (const i of pick(zoho.data.invoices.filter((x) => Number(x['balance']) > 100), cfg.changedInvoices)) {
      i['balance'] = Number(i['balance']) - 100;
      i['status'] = 'partially_paid';
      i['last_modified_time'] = zohoStamp(now);
    }
    mark = { api: zoho.requests.length, token: zoho.tokenCalls.length };
    const incremental = await sync('incremental');
    assertSucceeded(incremental.run, 'zoho incremental sync');
    const incRequests = requestsSince(zoho, mark);
    // Nothing of payments changed: one listing page each (an empty one says so), no payment detail.
    const incMinimal = { n: 3, breakdown: '1 + 1 + 1 listing pages + 0 payment details' };
    const incRow = row('incremental', cfg.changedCustomers + cfg.changedInvoices, incRequests, incMinimal, incremental);
    bench.log(`  incremental (${cfg.changedCustomers} customers, ${cfg.changedInvoices} invoices changed): ${describe(incRow)}`);
    return { config: cfg, perMinute, inFlight: ZOHO_IN_FLIGHT, data, first: firstRow, incremental: incRow };
  } finally {
    await worker?.close(10_000);
    await adapter?.close();
    await app?.close();
    await zoho.close();
  }
}
