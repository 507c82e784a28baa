/**
 * A connect link opened by a real browser: headless Chromium (`CHROMIUM_PATH`, else `chromium` or
 * `chromium-browser` on the PATH) loads the link, follows the redirects through the fake Xero's consent screen to the
 * callback, and shows the page the customer sees; the organisation is then connected and its first run lands
 * records. The consent screen's address opened in another browser (one without the cookie of the browser that opened
 * the link) lands on the one 401. Where no Chromium is installed the test is skipped, and says so (Debian: `apt-get install chromium`).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForRun } from '../../src/state/index.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { buildContacts, buildInvoices } from '../platforms/xero/fixtures.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { freePort, linkOf } from './browser.js';

function findChromium(): string | undefined {
  const candidates = [process.env['CHROMIUM_PATH'], 'chromium', 'chromium-browser'].filter((c): c is string => !!c);
  for (const c of candidates) {
    try {
      execFileSync(c, ['--version'], { stdio: 'ignore', timeout: 20_000 });
      return c;
    } catch {
      // not this one
    }
  }
  return undefined;
}

const chromium = findChromium();
if (!chromium) console.log('connect link in headless Chromium: skipped, no Chromium installed (apt-get install chromium, or set CHROMIUM_PATH)');

/** The DOM Chromium shows after loading `url` (and every redirect it leads to), in a profile of its own. */
function dumpDom(binary: string, url: string): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'cs-chromium-'));
  const flags = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, '--dump-dom', url,
  ];
  return new Promise((resolve, reject) => {
    execFile(binary, flags, { timeout: 60_000, maxBuffer: 4 * 1024 * 1024 }, (err: Error | null, stdout: string) => {
      rmSync(profile, { recursive: true, force: true });
      if (err) reject(err);
      else resolve(stdout);
    });
  });
}

describe.skipIf(!chromium)('a connect link in headless Chromium', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let rig: Rig;
  let publicUrl: string;

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    const contacts = buildContacts(5, { startMs: Date.parse('2026-03-01T08:00:00Z') });
    fake.data.Contacts = contacts;
    fake.data.Invoices = buildInvoices(contacts, 1, { startMs: Date.parse('2026-03-01T08:00:00Z') });
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: fake.options.xeroTenantId, name: 'Browser Ltd' }] });
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        {
          id: 'web',
          platform: {
            kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, apiUrl: fake.apiUrl,
            tokenUrl: fake.tokenUrl, authorizeUrl: fake.authorizeUrl, connectionsUrl: fake.connectionsUrl,
          },
        },
      ],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
    await redis?.stop();
  });

  it('shows the customer the connected page, and the first run lands the records', async () => {
    const before = Date.now();
    const dom = await dumpDom(chromium!, (await linkOf(rig, 'web')).url);
    expect(dom).toContain('<strong>Browser Ltd</strong> is connected');
    expect(fake.oauth!.exchanges).toEqual([{ outcome: 'issued' }]);
    for (const t of [...fake.issuedRefresh, ...fake.issuedAccess]) expect(dom).not.toContain(t);
    const run = await waitForRun(rig.app.stores.runs, 'web', { mode: 'full', requestedAt: before, timeoutMs: 60_000 });
    expect(run.outcome).toBe('succeeded');
    expect(rig.sim.data('client-web').contacts).toHaveLength(5);
  }, 120_000);

  it("refuses the consent screen's address opened in another browser (the one that opened the link kept its cookie)", async () => {
    // Whoever holds a (reconnect) link opens it, and sends the consent URL it leads to to someone else.
    const opened = await fetch((await linkOf(rig, 'web', { reconnect: true })).url, { redirect: 'manual' });
    const consent = opened.headers.get('location')!;
    const exchanges = fake.oauth!.exchanges.length;
    const dom = await dumpDom(chromium!, consent);
    expect(dom).toContain('"detail":"unauthorized"');
    expect(fake.oauth!.exchanges).toHaveLength(exchanges);
    expect(rig.logs.some((l) => l.includes('"reason":"other_browser"'))).toBe(false);
  }, 120_000);
});
