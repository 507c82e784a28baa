/**
 * The operator's console in a real browser (headless Chromium, playwright-core) against a worker's public server on
 * 127.0.0.1: sign-in, the tenant list (search, a state filter, pages), a tenant, its dead letters with their place
 * and reason, Retry that starts a replay, Run now, a connect link made and revoked, a key limited to some tenants,
 * sign-out, a form without its CSRF token, an expired session. axe-core finds no serious or critical violation on
 * any page, and no page breaks its Content-Security-Policy.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousViolations } from '../helpers/browser.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';
import { newSecret, startReceiver, type Receiver } from '../notify/receiver.js';
import { Secret } from '../../src/secret.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { PlatformAuth } from '../../src/platforms/oauth/oauth.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';

const FULL = 'full-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const BETA_ONLY = 'beta-key-Pn5Dx8Qw2Ha7Rk4VmLz9Tc3Jb6Fs';
const T = '2026-11-02T08:15:00Z';
const BAD = 3;
/** Filler tenants: with acme, beta and kiwi, more than one page of the list (50). */
const FILLERS = 50;

describe('the operator\'s console', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let base: string;
  let folder: string;
  let browser: Browser;
  let receiver: Receiver;
  const csp: string[] = [];

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-console-'));
    const contacts = [
      JSON.stringify({ id: 'C1', updatedAt: T, name: 'شركة الرياض للتجارة' }),
      JSON.stringify({ id: 'C2', updatedAt: T, name: 'Globex' }),
      ...Array.from({ length: BAD }, (_, i) => JSON.stringify({ id: `BAD${i + 1}`, updatedAt: T })),
    ];
    await writeFile(join(folder, 'contacts.ndjson'), contacts.join('\n') + '\n');
    await writeFile(join(folder, 'invoices.ndjson'), JSON.stringify({ id: 'I1', contactId: 'C1', updatedAt: T, status: 'AUTHORISED', number: 'N-1', date: '2026-10-01', dueDate: '2026-10-31', total: 100 }) + '\n');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const hookSecret = newSecret();
    receiver = await startReceiver(hookSecret);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'file', path: folder } },
        { id: 'beta', platform: { kind: 'memory', name: 'beta' } },
        { id: 'kiwi', platform: { kind: 'xero', clientId: 'XEROCLIENT', clientSecret: 'xero-secret' } },
        ...Array.from({ length: FILLERS }, (_, i) => ({ id: `m${String(i).padStart(2, '0')}`, platform: { kind: 'memory', name: `m${i}` } })),
      ],
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', PUBLIC_URL: base, PLATFORM_TOKEN_KEY: TOKEN_KEY, API_KEYS: `ops:${FULL}\nbeta-only:${BETA_ONLY}:beta`, RUN_WEBHOOK_URL: receiver.url, RUN_WEBHOOK_SECRET: hookSecret },
    });
    const first = await rig.sync('acme', 'full');
    expect(first.outcome).toBe('partial');
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
    await receiver?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  /** A new browser (its own cookies) whose pages report any Content-Security-Policy refusal. */
  const fresh = async (): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ locale: 'en-GB' });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) csp.push(m.text());
    });
    return { context, page };
  };

  const signIn = async (page: Page, key: string): Promise<void> => {
    await page.goto(`${base}/console/sign-in`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/tenants/);
  };

  /** Where Redis keeps the session of a cookie's id: under the id's digest, never the id itself. */
  const sessionKey = (id: string): string => `${rig.env.KEY_PREFIX}:console:session:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;

  const accessible = async (page: Page): Promise<void> => {
    expect(await seriousViolations(page), page.url()).toEqual([]);
  };

  it('refuses a key that is not one of API_KEYS, and signs in with one: the key is in no cookie and no storage', async () => {
    const { context, page } = await fresh();
    await page.goto(`${base}/console/tenants`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await accessible(page);
    await page.getByLabel('API key').fill('not-a-key-of-this-worker-at-all-0123456789');
    const refused = page.waitForResponse((r) => r.url().endsWith('/console/sign-in') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect((await refused).status()).toBe(401);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not an API key');

    await page.getByLabel('API key').fill(FULL);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/console/tenants`);
    expect(await page.getByText('Signed in with key').textContent()).toContain('ops');
    const cookies = await context.cookies();
    expect(cookies.map((c) => c.name)).toContain('cs_console');
    for (const c of cookies) {
      expect(c.value).not.toContain(FULL);
      if (c.name === 'cs_console') expect(c).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    }
    const stored = await page.evaluate('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })');
    expect(stored).not.toContain(FULL);
    // Nothing of the key is kept in Redis either: the session record is sealed, under the id's digest.
    const session = cookies.find((c) => c.name === 'cs_console')?.value ?? '';
    const raw = (await rig.app.redis.get(sessionKey(session))) ?? '';
    expect(raw).not.toBe('');
    expect(raw).not.toContain(FULL);
    expect(Buffer.from(raw, 'base64').toString('latin1')).not.toContain('ops');
    expect(rig.logs.join('')).not.toContain(FULL);
    await context.close();
  });

  it('lists the tenants a page at a time, finds one by search and by state, and every list page is accessible', async () => {
    const { context, page } = await fresh();
    await signIn(page, FULL);
    await accessible(page);
    const names = async (): Promise<string[]> => page.locator('tbody th[scope=row] a').allTextContents();
    const first = await names();
    expect(first).toHaveLength(50);
    expect(first.slice(0, 3)).toEqual(['acme', 'beta', 'kiwi']);
    await page.getByRole('link', { name: 'Next page' }).click();
    const second = await names();
    expect(second).toHaveLength(FILLERS + 3 - 50);
    expect(new Set([...first, ...second]).size).toBe(FILLERS + 3);

    await page.goto(`${base}/console/tenants`);
    await page.getByLabel('Search (tenant id or organisation)').fill('kiw');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await names()).toEqual(['kiwi']);
    await page.getByLabel('Search (tenant id or organisation)').fill('');
    await page.getByLabel('State').selectOption('partial');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await names()).toEqual(['acme']);
    await page.getByLabel('State').selectOption('awaiting_connection');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await names()).toEqual(['kiwi']);
    await accessible(page);
    await context.close();
  });

  it('shows a tenant, its dead letters with their place and reason (names right to left), and Retry starts a replay', async () => {
    const { context, page } = await fresh();
    await signIn(page, FULL);
    await page.getByRole('link', { name: 'acme', exact: true }).click();
    await expect.poll(() => page.locator('h1').textContent()).toContain('acme');
    expect(await page.locator('#dead-letters + p').textContent()).toContain(`${BAD} dead letters`);
    expect(await page.locator('section[aria-labelledby=runs] tbody tr').count()).toBe(1);
    await accessible(page);

    // The run webhook's deliveries, newest first: Redeliver sends the same event again under its id.
    const delivered = await receiver.waitFor(1, 20_000);
    await page.reload();
    const redeliver = page.getByRole('button', { name: /^Redeliver msg_/ }).first();
    const eventId = ((await redeliver.getAttribute('aria-label')) ?? '').replace('Redeliver ', '');
    expect(eventId).toBe(String(delivered[0]?.headers['webhook-id']));
    await redeliver.click();
    expect(await page.getByRole('status').textContent()).toContain('queued for delivery again');
    const again = await receiver.waitFor(2, 20_000);
    expect(again.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);

    await page.getByRole('link', { name: `${BAD} dead letters` }).click();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(BAD);
    const places = await page.locator('tbody td.mono[dir=auto]').allTextContents();
    expect(places.sort()).toEqual(['contacts.ndjson:3', 'contacts.ndjson:4', 'contacts.ndjson:5']);
    expect(await rows.first().locator('td').nth(2).textContent()).toMatch(/name/i);
    await accessible(page);
    await page.getByLabel('Entity').selectOption('invoices');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await page.getByText('No dead letter of invoices.').count()).toBe(1);

    await page.goto(`${base}/console/tenants/acme/dead-letters`);
    await page.getByRole('link', { name: 'Retry dead letters…' }).click();
    expect(await page.locator('main').textContent()).toContain(`This queues a replay of acme's dead letters: ${BAD} dead letters`);
    await accessible(page);
    await page.getByRole('button', { name: 'Queue the replay' }).click();
    expect(await page.locator('main').textContent()).toMatch(/Queued a replay of acme's dead letters \(job [^)]+\): 3 dead letters/);
    await page.getByRole('link', { name: 'Follow the replay run' }).click();
    await expect.poll(async () => (await page.reload(), await page.locator('dl.facts').textContent()), { timeout: 30_000 }).toMatch(/Outcome\s*partial/);
    expect(await page.locator('dl.facts').textContent()).toContain('replay');
    await accessible(page);
    await context.close();
  });

  it('shows a connected organisation\'s Arabic name right to left, and revokes the connection after a confirmation', async () => {
    const org = '8f6c2c1e-2b7a-4c55-9d1e-0a1b2c3d4e5f';
    const auth = new PlatformAuth({ platform: xeroOAuth.chain, redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, connection: org, clientId: 'XEROCLIENT', clientSecret: new Secret('xero-secret'), tokenUrl: 'http://127.0.0.1:9/token', cipher: TokenCipher.fromText(TOKEN_KEY), dispatcher: new Agent() });
    await auth.connect({ refreshToken: 'refresh-of-a-grant', accessToken: 'access-of-a-grant', expiresInS: 1800 });
    await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).set('kiwi', { platform: 'xero', connection: org, name: 'مؤسسة النخيل التجارية', connectedAt: Date.now() });
    const { context, page } = await fresh();
    await signIn(page, FULL);
    await page.goto(`${base}/console/tenants/kiwi`);
    const name = page.locator('dl.facts dd span[dir=auto]', { hasText: 'مؤسسة النخيل' });
    expect(await name.evaluate((e) => (globalThis as unknown as { getComputedStyle(e: unknown): { direction: string } }).getComputedStyle(e).direction)).toBe('rtl');
    expect(await page.locator('html').getAttribute('dir')).toBeNull();
    expect(await page.getByRole('button', { name: 'Create reconnect link' }).count()).toBe(1);
    await accessible(page);
    await page.getByRole('link', { name: 'Revoke the connection…' }).click();
    expect(await page.locator('main').textContent()).toContain('It cannot be undone');
    await page.getByRole('button', { name: 'Revoke the connection' }).click();
    expect(await page.getByRole('status').textContent()).toContain('The connection is revoked');
    expect(await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).get('kiwi')).toBeUndefined();
    expect(await page.locator('dl.facts').first().textContent()).toBeTruthy();
    await context.close();
  });

  it('Run now queues a run, and its page follows it to the end', async () => {
    const { context, page } = await fresh();
    await signIn(page, FULL);
    await page.goto(`${base}/console/tenants/beta`);
    await page.getByRole('button', { name: 'Incremental' }).click();
    await page.waitForURL(/\/console\/tenants\/beta\/runs\/run-/);
    expect(await page.getByRole('status').first().textContent()).toMatch(/incremental run (is requested|was already queued)/);
    await expect.poll(async () => (await page.reload(), await page.locator('dl.facts').textContent()), { timeout: 30_000 }).toMatch(/Outcome\s*succeeded/);
    await accessible(page);
    expect(rig.logs.join('')).toMatch(/"key":"ops","action":"run requested"/);
    await context.close();
  });

  it('makes a connect link to copy, lists it, and revokes it', async () => {
    const { context, page } = await fresh();
    await signIn(page, FULL);
    await page.goto(`${base}/console/tenants/kiwi`);
    await accessible(page);
    await page.getByLabel('Link works for').selectOption('1d');
    await page.getByRole('button', { name: 'Create connect link' }).click();
    const url = await page.getByLabel('Link').inputValue();
    expect(url.startsWith(`${base}/connect/`)).toBe(true);
    await accessible(page);
    await page.getByRole('link', { name: 'Back to kiwi' }).click();
    const revoke = page.getByRole('button', { name: /^Revoke link / });
    expect(await revoke.count()).toBe(1);
    await revoke.click();
    expect(await page.getByRole('status').textContent()).toContain('revoked');
    expect(await page.getByRole('button', { name: /^Revoke link / }).count()).toBe(0);
    await context.close();
  });

  it('a key limited to some tenants sees only those, in the list, the search and by address', async () => {
    const { context, page } = await fresh();
    await signIn(page, BETA_ONLY);
    expect(await page.locator('tbody th[scope=row] a').allTextContents()).toEqual(['beta']);
    await page.goto(`${base}/console/tenants?q=acme`);
    expect(await page.locator('tbody tr').count()).toBe(0);
    const other = await page.goto(`${base}/console/tenants/acme`);
    expect(other?.status()).toBe(404);
    const letters = await page.goto(`${base}/console/tenants/acme/dead-letters`);
    expect(letters?.status()).toBe(404);
    // A path that is no tenant id goes no further (it would name another route of the API).
    const crafted = await page.goto(`${base}/console/tenants/beta%2F..%2F..%2Fevents`);
    expect(crafted?.status()).toBe(404);
    await accessible(page);
    await context.close();
  });

  it('refuses a form without the session\'s CSRF token, signs out on the server, and ends an expired session', async () => {
    const { context, page } = await fresh();
    await signIn(page, FULL);
    const session = (await context.cookies()).find((c) => c.name === 'cs_console');
    expect(session).toBeDefined();
    const cookie = `cs_console=${session?.value ?? ''}`;
    const before = (await rig.app.stores.runs.recent('beta', 50)).length;
    for (const csrf of ['', 'forged-token-forged-token-forged-token-00']) {
      const r = await request(`${base}/console/tenants/beta/runs`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: `mode=full&_csrf=${csrf}` });
      expect(r.statusCode).toBe(403);
      expect(await r.body.text()).toContain('CSRF');
    }
    expect((await rig.app.stores.runs.recent('beta', 50)).length).toBe(before);
    expect(await rig.app.queues.sync.getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')).toBe(0);

    // Signed out: the session is gone on the server, so the old cookie opens nothing.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in/);
    const replayed = await request(`${base}/console/tenants`, { headers: { cookie } });
    expect(replayed.statusCode).toBe(303);
    expect(replayed.headers['location']).toMatch(/^\/console\/sign-in/);
    await replayed.body.dump();

    // Expired: Redis lets the session go at its TTL (CONSOLE_SESSION_S); the next page asks to sign in again.
    await signIn(page, FULL);
    const key = sessionKey((await context.cookies()).find((c) => c.name === 'cs_console')?.value ?? '');
    expect(await rig.app.redis.ttl(key)).toBeGreaterThan(28_000);
    await rig.app.redis.pexpire(key, 1);
    await new Promise((r) => setTimeout(r, 20));
    await page.goto(`${base}/console/tenants/beta`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/console/tenants/beta');
    await page.getByLabel('API key').fill(FULL);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/console/tenants/beta`);
    await context.close();
  });

  // Last: it locks this address out of sign-in for the rest of the minute.
  it('after 10 failed sign-ins in a minute an address waits, the right key included', async () => {
    const { context, page } = await fresh();
    const attempt = async (key: string): Promise<number> => {
      await page.goto(`${base}/console/sign-in`);
      await page.getByLabel('API key').fill(key);
      const answer = page.waitForResponse((r) => r.url().endsWith('/console/sign-in') && r.request().method() === 'POST');
      await page.getByRole('button', { name: 'Sign in' }).click();
      return (await answer).status();
    };
    // The first test's wrong key may still count in its minute, and that minute may end during this loop (a slow
    // machine): 9 to 19 failures answer 401 (never more than 10 in one minute), then 429.
    const statuses: number[] = [];
    while (statuses.length < 21 && statuses[statuses.length - 1] !== 429) statuses.push(await attempt(`wrong-key-${statuses.length}-0123456789abcdefghijklmnop`));
    expect(statuses[statuses.length - 1]).toBe(429);
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(statuses.length - 1).toBeGreaterThanOrEqual(9);
    expect(statuses.length - 1).toBeLessThanOrEqual(19);
    expect(await attempt(FULL)).toBe(429);
    expect(await page.locator('main').textContent()).toMatch(/Too many attempts.*Wait \d+ s/s);
    expect(rig.logs.join('')).toContain('too many failed ones from this address');
    await context.close();
  });

  it('no page broke its Content-Security-Policy', () => {
    expect(csp).toEqual([]);
  });
});
