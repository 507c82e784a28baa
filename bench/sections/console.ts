/**
 * The operator's console (issue: "pages answer in under 50 ms for a tenant with 10,000 dead letters, paged"): wall
 * time of each console page over HTTP, signed in as an operator, against the goal of 50 ms.
 *
 * In this process: an App and its worker (the worker's own `createApp` + `startWorker`, schedules off) on the bench's
 * Redis with its public server on 127.0.0.1 (WEBHOOK_PORT, API_KEYS), so the pages are the sources run through tsx,
 * not the built `dist/` the worker sections run. Its tenants: `big`, a file tenant synced once for real (a partial
 * run: a few bad lines), then given `deadLetters` more dead letters through the real DeadLetterStore `add` (batches
 * of 500, as that run's: BAD_RECORD at `contacts.ndjson:N`, a record for every third), and `others` memory tenants
 * beside it (never run), so the tenant list and its `state` filter have a fleet to page and scan.
 *
 * Signs in over HTTP (undici: the sign-in form's cookie and `_csrf`, then the session cookie), then times each page
 * over `warmup` + `requests` GETs one after another: the tenant list's first page, the list filtered by
 * `state=partial` (a scan of every tenant: one matches), the tenant's page, its dead letters' first page and a later
 * one (the `Older` link's cursor followed `laterPage` times), and the run's page (the dead letters it made).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { createApp, type App } from '../../src/app.js';
import { loadEnv } from '../../src/config/env.js';
import { parseTenants } from '../../src/config/tenants.js';
import { createLogger } from '../../src/logger.js';
import { requestSync } from '../../src/queues/index.js';
import { waitForRun, type DeadLetter } from '../../src/state/index.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { freePort } from '../../test/helpers/redis.js';
import { clientIdOf, secretOf, type Bench } from '../harness.js';

export interface ConsoleConfig {
  /** Dead letters of the big tenant, written through DeadLetterStore.add. */
  deadLetters: number;
  /** Memory tenants beside it. */
  others: number;
  /** GETs of each page not counted, then counted (one after another). */
  warmup: number;
  requests: number;
  /** How many times the dead letters' `Older` link is followed for the later page (50 a page). */
  laterPage: number;
}

export interface ConsolePageTiming {
  page: string;
  path: string;
  medianMs: number;
  p95Ms: number;
  maxMs: number;
  /** Bytes of the page's HTML. */
  bytes: number;
  pass: boolean;
}

export interface ConsoleResult {
  config: ConsoleConfig;
  goalMs: number;
  tenants: number;
  deadLetters: number;
  /** Wall time of writing the dead letters. */
  seedMs: number;
  pages: ConsolePageTiming[];
}

const GOAL_MS = 50;
const BIG = 'big';
const KEY = `ops:${randomBytes(32).toString('base64url')}`;
const T = '2026-11-02T08:15:00Z';
const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? 0;
};
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const unescape = (s: string): string => s.replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&quot;/g, '"');

const REASONS = [
  'contacts.ndjson: a line that is not JSON',
  'contacts.ndjson: a record without an id',
  'contacts.ndjson: updatedAt is not a date',
  'contacts.ndjson: name is empty',
] as const;

export async function runConsoleSection(bench: Bench, cfg: ConsoleConfig): Promise<ConsoleResult> {
  bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
  const folder = join(bench.root, 'console');
  await mkdir(folder, { recursive: true });
  const good = Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `C${i + 1}`, updatedAt: T, name: `Customer ${i + 1}` }));
  await writeFile(join(folder, 'contacts.ndjson'), [...good, ...Array.from({ length: 3 }, (_, i) => JSON.stringify({ id: `BAD${i + 1}`, updatedAt: T }))].join('\n') + '\n');
  await writeFile(join(folder, 'invoices.ndjson'), JSON.stringify({ id: 'I1', contactId: 'C1', updatedAt: T, status: 'AUTHORISED', number: 'N-1', date: '2026-10-01', dueDate: '2026-10-31', total: 100 }) + '\n');

  const ids = [BIG, ...Array.from({ length: cfg.others }, (_, i) => `t${String(i).padStart(5, '0')}`)];
  for (const id of ids) bench.sim.setClient(clientIdOf(id), secretOf(id));
  const file = parseTenants(
    JSON.stringify({
      tenants: ids.map((id) => ({
        id,
        collections: { clientId: clientIdOf(id), clientSecret: secretOf(id) },
        platform: id === BIG ? { kind: 'file', path: folder } : { kind: 'memory', name: id },
      })),
    }),
    {},
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = loadEnv({
    REDIS_URL: bench.redis.url,
    KEY_PREFIX: `{bench-console-${Date.now()}}`,
    COLLECTIONS_BASE_URL: bench.sim.baseUrl,
    COLLECTIONS_AUTH_URL: bench.sim.authUrl,
    LOG_LEVEL: 'warn',
    WEBHOOK_PORT: String(port),
    WEBHOOK_HOST: '127.0.0.1',
    PUBLIC_URL: base,
    PLATFORM_TOKEN_KEY: randomBytes(32).toString('base64'),
    API_KEYS: KEY,
    // The bench signs in once; timing pages must not meet the API's rate limit.
    API_RATE_PER_MIN: '100000',
  });
  let app: App | undefined;
  let worker: RunningWorker | undefined;
  const agent = new Agent({ connections: 1 });
  try {
    app = await createApp({ env, tenants: file, logger: createLogger({ level: 'warn' }), role: 'worker' });
    const a = app;
    worker = await startWorker(a, { queues: ['sync', 'refreshToken'], schedules: false, opsPort: 0 });
    const { requestedAt } = await requestSync(a.queues.sync, BIG, 'full', { trigger: 'cli' });
    const run = await waitForRun(a.stores.runs, BIG, { mode: 'full', requestedAt, timeoutMs: 60_000, pollMs: 50 });
    if (run.outcome !== 'partial') throw new Error(`console: the big tenant's first sync was ${String(run.outcome)}, not partial`);

    // The dead letters, as that run's: bad lines of contacts.ndjson, oldest first.
    const t0 = performance.now();
    const at0 = Date.now();
    for (let i = 0; i < cfg.deadLetters; i += 500) {
      const batch: DeadLetter[] = [];
      for (let j = i; j < Math.min(cfg.deadLetters, i + 500); j += 1) {
        const line = 24 + j;
        batch.push({
          entity: 'contacts',
          place: `contacts.ndjson:${line}`,
          reason: REASONS[j % REASONS.length]!,
          code: 'BAD_RECORD',
          ...(j % 3 === 0 ? { record: { id: `X${line}`, name: `Customer ${line}`, email: `ap${line}@example.com`, updatedAt: 'yesterday' } } : {}),
          runId: run.runId,
          at: at0 + j,
        });
      }
      await a.stores.deadLetters.add(BIG, batch);
    }
    const seedMs = performance.now() - t0;
    const deadLetters = await a.stores.deadLetters.count(BIG);
    bench.log(`  ${ids.length} tenants; ${deadLetters} dead letters of ${BIG} written in ${Math.round(seedMs)} ms`);

    // Sign in as a browser does.
    const get = async (path: string, cookie?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> => {
      const r = await request(`${base}${path}`, { dispatcher: agent, headers: cookie === undefined ? {} : { cookie } });
      return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
    };
    const form = await get('/console/sign-in');
    const signInCookie = [form.headers['set-cookie']].flat().find((c) => c?.startsWith('cs_console_signin='))?.split(';')[0];
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
    if (signInCookie === undefined || csrf === undefined) throw new Error('console: the sign-in form gave no cookie or no _csrf');
    const posted = await request(`${base}/console/sign-in`, {
      dispatcher: agent,
      method: 'POST',
      headers: { cookie: signInCookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, key: KEY.slice('ops:'.length) }).toString(),
    });
    await posted.body.dump();
    const session = [posted.headers['set-cookie']].flat().find((c) => c?.startsWith('cs_console='))?.split(';')[0];
    if (posted.statusCode !== 303 || session === undefined) throw new Error(`console: sign-in answered ${posted.statusCode} without a session cookie`);

    const page = async (path: string): Promise<string> => {
      const r = await get(path, session);
      if (r.status !== 200) throw new Error(`console: GET ${path} answered ${r.status}`);
      return r.body;
    };
    const older = (html: string): string => {
      const href = /<a href="([^"]+)" rel="next">/.exec(html)?.[1];
      if (href === undefined) throw new Error('console: a dead letters page without its Older link');
      return unescape(href);
    };
    const dead = `/console/tenants/${BIG}/dead-letters`;
    let later = dead;
    for (let k = 0; k < cfg.laterPage; k += 1) later = older(await page(later));
    const partial = await page('/console/tenants?state=partial');
    if (!partial.includes(`>${BIG}</a>`)) throw new Error('console: the state=partial list does not show the big tenant');

    const targets: [string, string][] = [
      ['tenant list, first page', '/console/tenants'],
      ['tenant list, state=partial', '/console/tenants?state=partial'],
      ['tenant page', `/console/tenants/${BIG}`],
      ['dead letters, first page', dead],
      [`dead letters, page ${cfg.laterPage + 1} (Older x${cfg.laterPage})`, later],
      ['run page', `/console/tenants/${BIG}/runs/${encodeURIComponent(run.runId)}`],
    ];
    const pages: ConsolePageTiming[] = [];
    for (const [name, path] of targets) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < cfg.warmup + cfg.requests; i += 1) {
        const s = performance.now();
        const body = await page(path);
        const ms = performance.now() - s;
        bytes = Buffer.byteLength(body);
        if (i >= cfg.warmup) times.push(ms);
      }
      const row: ConsolePageTiming = { page: name, path, medianMs: round(median(times)), p95Ms: round(quantile(times, 0.95)), maxMs: round(Math.max(...times)), bytes, pass: quantile(times, 0.95) <= GOAL_MS };
      bench.log(`  ${name}: median ${row.medianMs} ms, p95 ${row.p95Ms} ms (${Math.round(bytes / 1024)} KB) ${row.pass ? 'within' : 'over'} ${GOAL_MS} ms`);
      pages.push(row);
    }
    return { config: cfg, goalMs: GOAL_MS, tenants: ids.length, deadLetters, seedMs: Math.round(seedMs), pages };
  } finally {
    await agent.close();
    await worker?.close(10_000);
    await app?.close();
  }
}
