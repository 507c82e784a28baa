/**
 * `connect link|status|revoke` as an operator runs them (child processes of the CLI), against a worker whose public
 * server serves the links: awaiting connection, a link opened, connected (since when, refresh token age), revoke
 * refused without --yes, revoked at the fake Xero (DELETE /connections/{id}) with the chain deleted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { browse, freePort, linkOf } from './browser.js';
import { runCli, type CliResult } from '../helpers/cli-child.js';


describe('connect link, status and revoke on the command line', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let rig: Rig;
  let folder: string;
  let env: Record<string, string>;

  const cli = (args: string[]): Promise<CliResult> => runCli(args, env).done;

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: fake.options.xeroTenantId, name: 'Kiwi Ltd' }] });
    const tenants: TenantSpec[] = [
      { id: 'kiwi', platform: { kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl, authorizeUrl: fake.authorizeUrl, connectionsUrl: fake.connectionsUrl } },
      { id: 'files', platform: { kind: 'file', path: '/nonexistent' } },
    ];
    const extra = { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl };
    rig = await startRig({ redisUrl: redis.url, tenants, env: { ...extra, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1' } });
    folder = await mkdtemp(join(tmpdir(), 'cs-connect-cli-'));
    const file = join(folder, 'tenants.json');
    await writeFile(file, tenantsJson(tenants));
    env = { ...rig.cliEnv(file), ...extra };
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
    await redis?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  // Each CLI run is a child process (a few seconds on a loaded machine): these take longer than most tests.
  it('awaiting connection, then a link, connected', { timeout: 120_000 }, async () => {
    const before = await cli(['connect', 'status']);
    expect(before).toMatchObject({ code: 1, stdout: 'kiwi: awaiting connection xero: collections-sync connect link --tenant kiwi\n' });

    const made = await cli(['connect', 'link', '--tenant', 'kiwi', '--expires', '2h', '--json']);
    expect(made.code).toBe(0);
    const { url, expiresAt } = JSON.parse(made.stdout) as { url: string; expiresAt: string };
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(7_000_000);
    expect((await browse(url)).status).toBe(200);
    expect((await cli(['connect', 'link', '--tenant', 'files'])).stderr).toContain('only xero, quickbooks, zoho-books tenants are connected with a link');

    const after = await cli(['connect', 'status', '--tenant', 'kiwi', '--json']);
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout)).toEqual([
      expect.objectContaining({ tenant: 'kiwi', state: 'connected', connection: fake.options.xeroTenantId, name: 'Kiwi Ltd', via: 'link', refreshTokenAgeDays: 0, links: [] }),
    ]);
  });

  it('connected: a plain link is refused (exit 2, nothing made); a reconnect link is made, listed, and revoked by its id', { timeout: 120_000 }, async () => {
    const plain = await cli(['connect', 'link', '--tenant', 'kiwi']);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('already has a xero connection');
    expect(plain.stdout).toBe('');
    const again = await cli(['connect', 'link', '--tenant', 'kiwi', '--reconnect']);
    expect(again.code).toBe(0);
    const id = /link ([A-Za-z0-9_-]{12}) \(reconnect\): works once/.exec(again.stderr)?.[1];
    expect(id, again.stderr).toBeDefined();
    expect((await cli(['connect', 'status', '--tenant', 'kiwi'])).stdout).toContain(`  link ${id!} (reconnect) outstanding until `);
    expect(await cli(['connect', 'revoke-link', id!, '--tenant', 'kiwi'])).toMatchObject({ code: 0, stdout: `kiwi: link ${id!} revoked\n` });
    expect((await fetch(again.stdout.trim(), { redirect: 'manual' })).status).toBe(401);
    const twice = await cli(['connect', 'revoke-link', id!, '--tenant', 'kiwi']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(`kiwi has no outstanding connect link ${id!}`);
    // The link goes to stdout only: the line on stderr (where logs go) names its id, never the link.
    expect(again.stderr).not.toContain(again.stdout.trim().split('/connect/')[1]!);
  });

  it('revoke: refused without --yes; revoked at the platform, the chain deleted, outstanding links revoked with it', { timeout: 120_000 }, async () => {
    const outstanding = await linkOf(rig, 'kiwi', { reconnect: true });
    expect((await cli(['connect', 'revoke', '--tenant', 'kiwi'])).code).toBe(2);
    const revoked = await cli(['connect', 'revoke', '--tenant', 'kiwi', '--yes']);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain('revoked at the platform; token chain deleted; 1 outstanding link revoked');
    expect((await fetch(outstanding.url, { redirect: 'manual' })).status).toBe(401);
    expect(fake.oauth!.revocations).toHaveLength(1);
    expect(fake.oauth!.connections).toHaveLength(0);
    expect(await new XeroTokenStore(rig.app.redis, rig.env.KEY_PREFIX, fake.options.xeroTenantId).read()).toBeUndefined();
    expect((await cli(['connect', 'status'])).stdout).toContain('kiwi: awaiting connection');
  });
});
