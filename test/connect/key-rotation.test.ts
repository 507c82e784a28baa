/**
 * Security review, finding 3: rotating PLATFORM_TOKEN_KEY broke every connection silently (runs failed with "stored
 * access token cannot be decrypted" while GET /v1/tenants/{id} said `connected`). A chain the keys cannot decrypt is
 * `needs_reconnect` in the API and `connect status` (the reason named), and one `connection.changed` event goes out.
 * A rotation is supported: PLATFORM_TOKEN_KEY the new key, PLATFORM_TOKEN_KEY_PREVIOUS the old one: chains sealed
 * with the old key are read, and sealed again with the new one at their next use; a tenants-file refresh token's
 * fingerprint (kept under the old key) still counts as seen. Each worker here is a rig started on the same Redis and
 * KEY_PREFIX, one after the other, as a fleet restarted with new settings.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { waitForRun } from '../../src/state/index.js';
import { runCli } from '../helpers/cli-child.js';
import { ApiClient } from '../helpers/openapi.js';
import { openApiDocument } from '../../src/api/index.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';
import { newSecret, startReceiver, until, type Receiver } from '../notify/receiver.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { buildContacts } from '../platforms/xero/fixtures.js';
import { startFake } from '../platforms/xero/harness.js';
import { Browser, freePort, linkOf } from './browser.js';

const OLD = randomBytes(32).toString('base64');
const NEW = randomBytes(32).toString('hex');
const KEY = 'rotation-key-0123456789abcdefghijklmnopqrstuvwxyz';

describe('rotating PLATFORM_TOKEN_KEY', () => {
  const redis = useTestRedis();
  const prefix = testPrefix('rotate');
  let kiwi: FakeXero;
  let filed: FakeXero;
  let receiver: Receiver;
  let tenants: TenantSpec[];
  let fileToken: string;
  let rig: Rig | undefined;
  let port: number;
  let folder: string;

  /** A worker (rig) on the shared Redis and prefix, with these token keys. */
  const worker = async (keys: Record<string, string>): Promise<Rig> => {
    await rig?.close();
    port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      tenants,
      env: { KEY_PREFIX: prefix, PUBLIC_URL: `http://127.0.0.1:${port}`, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', API_KEYS: `ops:${KEY}`, NOTIFY_BACKOFF_MS: '30', NOTIFY_BACKOFF_MAX_MS: '120', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8', ...keys },
    });
    return rig;
  };
  const run = async (r: Rig, tenant: string): Promise<{ outcome: string | undefined; errors: string[] }> => {
    const requestedAt = Date.now();
    await r.app.queues.sync.add('sync-run', { tenantId: tenant, mode: 'incremental', trigger: 'test', requestedAt }, { attempts: 1 });
    const done = await waitForRun(r.app.stores.runs, tenant, { mode: 'incremental', requestedAt, timeoutMs: 30_000 });
    return { outcome: done.outcome, errors: done.errors };
  };
  const connection = async (tenant: string): Promise<{ state: string; reason?: string }> => {
    const got = await new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`).call<{ connection: { state: string; reason?: string } }>('GET', `/v1/tenants/${tenant}`, { key: KEY });
    expect(got.status).toBe(200);
    return got.body.connection;
  };
  const changes = (): { state: string; reason?: string; tenantId: string }[] =>
    receiver.received.map((r) => r.verified as { type: string; data: { state: string; reason?: string; tenantId: string } }).filter((e) => e.type === 'connection.changed').map((e) => e.data);
  const chainOf = (f: FakeXero) => new XeroTokenStore(rig!.app.redis, prefix, f.options.xeroTenantId).read();
  const sealedBy = (box: string, org: string, key: string): boolean => TokenCipher.fromText(key).openedBy(box, `${org}:refresh`) === 'current';

  beforeAll(async () => {
    kiwi = await startFake();
    kiwi.data.Contacts = buildContacts(3, { startMs: Date.parse('2026-03-01T08:00:00Z') });
    filed = await startFake({ clientId: 'XEROCLIENT2', clientSecret: 'xero-secret-2' });
    filed.data.Contacts = buildContacts(2, { startMs: Date.parse('2026-03-01T08:00:00Z') });
    fileToken = filed.issueRefreshToken();
    const secret = newSecret();
    receiver = await startReceiver(secret);
    const platformOf = (f: FakeXero) => ({ kind: 'xero', clientId: f.options.clientId, clientSecret: f.options.clientSecret, apiUrl: f.apiUrl, tokenUrl: f.tokenUrl, authorizeUrl: f.authorizeUrl, connectionsUrl: f.connectionsUrl });
    tenants = [
      { id: 'kiwi', platform: platformOf(kiwi), extra: { notify: { url: receiver.url, secret } } },
      { id: 'filed', platform: { ...platformOf(filed), refreshToken: fileToken, xeroTenantId: filed.options.xeroTenantId } },
    ];
    folder = await mkdtemp(join(tmpdir(), 'cs-rotate-'));
  });
  afterAll(async () => {
    await rig?.close();
    await receiver?.close();
    await kiwi?.close();
    await filed?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('under the old key: kiwi connected by a link, filed seeded from the tenants file; both run', async () => {
    const r = await worker({ PLATFORM_TOKEN_KEY: OLD });
    kiwi.enableConnect({ redirectUri: `http://127.0.0.1:${port}/oauth/callback`, organisations: [{ tenantId: kiwi.options.xeroTenantId, name: 'Kiwi Ltd' }] });
    expect((await new Browser().browse((await linkOf(r, 'kiwi')).url)).status).toBe(200);
    await until(async () => changes().length, (n) => n >= 1, 30_000);
    expect((await run(r, 'kiwi')).outcome).toBe('succeeded');
    expect((await run(r, 'filed')).outcome).toBe('succeeded');
    expect(await connection('kiwi')).toMatchObject({ state: 'connected' });
  });

  it('the key replaced without the old one: needs_reconnect in the API and connect status, the reason named, told once', async () => {
    const r = await worker({ PLATFORM_TOKEN_KEY: NEW });
    // Before any run: the API reads the chain with the keys it has.
    expect(await connection('kiwi')).toMatchObject({ state: 'needs_reconnect', reason: expect.stringContaining('cannot be decrypted with PLATFORM_TOKEN_KEY') as unknown });
    const failed = await run(r, 'kiwi');
    expect(failed.outcome).toBe('failed');
    expect(failed.errors.join(' ')).toContain('cannot be decrypted');
    expect((await run(r, 'kiwi')).outcome).toBe('failed');
    const told = await until(async () => changes().filter((c) => c.state === 'needs_reconnect'), (c) => c.length >= 1, 30_000);
    expect(told[0]).toMatchObject({ tenantId: 'kiwi', reason: expect.stringContaining('cannot be decrypted') as unknown });
    await new Promise((res) => setTimeout(res, 300));
    expect(changes().filter((c) => c.state === 'needs_reconnect')).toHaveLength(1);

    const file = join(folder, 'tenants.json');
    await writeFile(file, tenantsJson(tenants));
    const status = await runCli(['connect', 'status', '--tenant', 'kiwi'], { ...r.cliEnv(file), PLATFORM_TOKEN_KEY: NEW, PUBLIC_URL: `http://127.0.0.1:${port}` }).done;
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('kiwi: needs reconnect xero');
    expect(status.stdout).toContain('cannot be decrypted with PLATFORM_TOKEN_KEY');
    expect(status.stdout).toContain('connect link --tenant kiwi --reconnect');
  });

  it('the new key with the old one as PLATFORM_TOKEN_KEY_PREVIOUS: runs read the chains and seal them again with the new key', async () => {
    const r = await worker({ PLATFORM_TOKEN_KEY: NEW, PLATFORM_TOKEN_KEY_PREVIOUS: OLD });
    expect(await connection('kiwi')).toMatchObject({ state: 'connected' });
    expect((await run(r, 'kiwi')).outcome).toBe('succeeded');
    expect((await run(r, 'filed')).outcome).toBe('succeeded');
    for (const f of [kiwi, filed]) {
      const chain = (await chainOf(f))!;
      expect(sealedBy(chain.state.cur, f.options.xeroTenantId, NEW)).toBe(true);
      expect(chain.undecryptable).toBeUndefined();
    }
    // The tenants file's refresh token (its fingerprint kept under the old key) did not restart filed's chain.
    expect(filed.usesOf(fileToken)).toBe(1);
    expect(r.logs.join('\n')).not.toContain('restarted the token chain');
    // The receiver heard that kiwi's chain decrypts again.
    await until(async () => changes().filter((c) => c.state === 'connected').length, (n) => n >= 2, 30_000);
  });

  it('then the new key alone: everything runs', async () => {
    const r = await worker({ PLATFORM_TOKEN_KEY: NEW });
    expect(await connection('kiwi')).toMatchObject({ state: 'connected' });
    expect((await run(r, 'kiwi')).outcome).toBe('succeeded');
    expect((await run(r, 'filed')).outcome).toBe('succeeded');
    expect(filed.usesOf(fileToken)).toBe(1);
  });
});

describe('PLATFORM_TOKEN_KEY_PREVIOUS', () => {
  it('is checked at load: the key form, not without PLATFORM_TOKEN_KEY, not the same key', () => {
    expect(loadEnv({ PLATFORM_TOKEN_KEY: NEW, PLATFORM_TOKEN_KEY_PREVIOUS: OLD }).PLATFORM_TOKEN_KEY_PREVIOUS).toBe(OLD);
    expect(() => loadEnv({ PLATFORM_TOKEN_KEY_PREVIOUS: OLD })).toThrow(/PLATFORM_TOKEN_KEY_PREVIOUS: is set without PLATFORM_TOKEN_KEY/);
    // The same 32 bytes, written as hex and as base64.
    expect(() => loadEnv({ PLATFORM_TOKEN_KEY: NEW, PLATFORM_TOKEN_KEY_PREVIOUS: Buffer.from(NEW, 'hex').toString('base64') })).toThrow(/is PLATFORM_TOKEN_KEY itself/);
    const bad = (() => {
      try {
        loadEnv({ PLATFORM_TOKEN_KEY: NEW, PLATFORM_TOKEN_KEY_PREVIOUS: 'not-a-key' });
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(bad).toMatch(/PLATFORM_TOKEN_KEY_PREVIOUS: must be 32 random bytes/);
    expect(bad).not.toContain('not-a-key');
  });

  it('the cipher reads with either key and writes with the new one', () => {
    const old = TokenCipher.fromText(OLD);
    const both = TokenCipher.fromText(NEW, OLD);
    const sealed = old.encrypt('a-token', 'ctx');
    expect(both.open(sealed, 'ctx')).toEqual({ plain: 'a-token', previous: true });
    const resealed = both.encrypt('a-token', 'ctx');
    expect(TokenCipher.fromText(NEW).decrypt(resealed, 'ctx')).toBe('a-token');
    expect(() => old.decrypt(resealed, 'ctx')).toThrow();
    expect(both.previousFingerprint('a-token')).toBe(old.fingerprint('a-token'));
    expect(TokenCipher.fromText(NEW).openedBy(sealed, 'ctx')).toBeUndefined();
  });
});
