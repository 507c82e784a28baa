/**
 * `npm run screenshots`: the console's pictures in README (docs/images/console-*.png), taken from the demo's data.
 * A private Redis, the collections simulator, a worker with its public server and three tenants (two file tenants
 * with the demo's sample and its bad lines, one Xero tenant awaiting its connect link), a full sync of each, then
 * Debian's Chromium signs in and takes the tenant list and a tenant's page. Needs redis-server and chromium.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadEnv } from '../src/config/env.js';
import { parseTenants } from '../src/config/tenants.js';
import { demoRedis } from '../src/demo/redis.js';
import { demoSample, writeDemoSample } from '../src/demo/sample.js';
import { createLogger } from '../src/logger.js';
import { requestSync } from '../src/queues/index.js';
import { startSimulator } from '../src/simulator/index.js';
import { waitForRun } from '../src/state/index.js';
import { startWorker } from '../src/worker.js';
import { launchBrowser } from '../test/helpers/browser.js';
import { freePort } from '../test/helpers/redis.js';

const OUT = join(process.cwd(), 'docs', 'images');
const FILE_TENANTS = [
  { id: 'riyadh-trading', contacts: 120, seed: 7 },
  { id: 'jeddah-foods', contacts: 60, seed: 11 },
] as const;

async function main(): Promise<void> {
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const redis = await demoRedis({});
    cleanups.push(() => redis.stop());
    const clients = [...FILE_TENANTS.map((t) => t.id), 'kiwi-books'].map((id) => ({ id, clientId: `client-${id}`, clientSecret: randomBytes(18).toString('base64url') }));
    const sim = await startSimulator({ clients: clients.map(({ clientId, clientSecret }) => ({ clientId, clientSecret })), port: 0 });
    cleanups.push(() => sim.close());
    const entries: unknown[] = [];
    for (const t of FILE_TENANTS) {
      const folder = await mkdtemp(join(tmpdir(), `cs-shots-${t.id}-`));
      cleanups.push(() => rm(folder, { recursive: true, force: true }));
      await writeDemoSample(folder, demoSample({ contacts: t.contacts, seed: t.seed }));
      const c = clients.find((x) => x.id === t.id);
      entries.push({ id: t.id, collections: { clientId: c?.clientId, clientSecret: c?.clientSecret }, platform: { kind: 'file', path: folder } });
    }
    const kiwi = clients.find((x) => x.id === 'kiwi-books');
    entries.push({ id: 'kiwi-books', collections: { clientId: kiwi?.clientId, clientSecret: kiwi?.clientSecret }, platform: { kind: 'xero', clientId: 'XEROCLIENT', clientSecret: 'xero-client-secret' } });
    const port = await freePort();
    const key = randomBytes(24).toString('base64url');
    const env = loadEnv({
      REDIS_URL: redis.url,
      KEY_PREFIX: '{cs-shots}',
      COLLECTIONS_BASE_URL: sim.baseUrl,
      COLLECTIONS_AUTH_URL: sim.authUrl,
      PENDING_MAX_WAIT_S: '0',
      WEBHOOK_PORT: String(port),
      WEBHOOK_HOST: '127.0.0.1',
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      PLATFORM_TOKEN_KEY: randomBytes(32).toString('base64'),
      API_KEYS: `support:${key}`,
    });
    const app = await createApp({ env, tenants: parseTenants(JSON.stringify({ tenants: entries }), {}, 'screenshot tenants'), logger: createLogger({ level: 'warn' }), role: 'worker' });
    cleanups.push(() => app.close());
    const worker = await startWorker(app, { opsPort: 0, schedules: false });
    cleanups.push(() => worker.close(5_000));
    for (const t of FILE_TENANTS) {
      const { requestedAt } = await requestSync(app.queues.sync, t.id, 'full', { trigger: 'cli' });
      const run = await waitForRun(app.stores.runs, t.id, { mode: 'full', requestedAt, timeoutMs: 120_000 });
      console.log(`${t.id}: full sync ${run.outcome ?? '?'}`);
    }
    const browser = await launchBrowser();
    cleanups.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, locale: 'en-GB' });
    const base = `http://127.0.0.1:${port}`;
    await page.goto(`${base}/console/sign-in`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/console/tenants`);
    await mkdir(OUT, { recursive: true });
    await page.screenshot({ path: join(OUT, 'console-tenants.png') });
    await page.goto(`${base}/console/tenants/riyadh-trading`);
    await page.screenshot({ path: join(OUT, 'console-tenant.png'), fullPage: false });
    await page.goto(`${base}/console/tenants/riyadh-trading/dead-letters`);
    await page.screenshot({ path: join(OUT, 'console-dead-letters.png') });
    console.log(`wrote ${join('docs', 'images')}/console-tenants.png, console-tenant.png, console-dead-letters.png`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => console.error(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
