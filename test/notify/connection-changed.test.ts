/**
 * `connection.changed` run webhooks (docs/run-webhooks.md) against the fake Xero: a connect link completed
 * (connected), the platform refusing the grant on a refresh (needs_reconnect), a new link (connected again: another
 * event id) and `collections-sync connect revoke` run as an operator runs it, a CLI child process that enqueues the
 * event itself (revoked). Each arrives signed, verified with the `standardwebhooks` package.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS } from '../../src/queues/index.js';
import { waitForRun } from '../../src/state/index.js';
import { browse, freePort, linkOf } from '../connect/browser.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { newSecret, startReceiver, until, type Received, type Receiver } from './receiver.js';
import { runCli, type CliResult } from '../helpers/cli-child.js';


describe('connection.changed webhooks', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let rig: Rig;
  let receiver: Receiver;
  let folder: string;
  let cliEnv: Record<string, string>;
  let publicUrl: string;

  const changes = (): Received[] => receiver.received.filter((r) => (r.verified as { type?: string }).type === 'connection.changed');
  const nthChange = async (n: number): Promise<Received> => {
    await until(async () => changes().length, (k) => k >= n, 30_000);
    return changes()[n - 1]!;
  };
  const link = async (reconnect = false): Promise<string> => (await linkOf(rig, 'kiwi', { reconnect })).url;
  const cli = (args: string[]): Promise<CliResult> => runCli(args, cliEnv).done;

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: fake.options.xeroTenantId, name: 'Kiwi Ltd' }] });
    const secret = newSecret();
    receiver = await startReceiver(secret);
    const tenants: TenantSpec[] = [
      {
        id: 'kiwi',
        platform: { kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl, authorizeUrl: fake.authorizeUrl, connectionsUrl: fake.connectionsUrl },
        extra: { notify: { url: receiver.url, secret } },
      },
    ];
    const extra = { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl };
    rig = await startRig({ redisUrl: redis.url, tenants, env: { ...extra, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', NOTIFY_BACKOFF_MS: '30', NOTIFY_BACKOFF_MAX_MS: '120', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' } });
    folder = await mkdtemp(join(tmpdir(), 'cs-notify-connect-'));
    const file = join(folder, 'tenants.json');
    await writeFile(file, tenantsJson(tenants));
    cliEnv = { ...rig.cliEnv(file), ...extra };
  });
  afterAll(async () => {
    await receiver?.close();
    await rig?.close();
    await fake?.close();
    await redis?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('connected, needs_reconnect (the platform refused the grant), connected again, revoked (from the CLI): each once, signed', async () => {
    const visit = await browse(await link());
    expect(visit.status).toBe(200);
    const connected = await nthChange(1);
    expect(connected.valid).toBe(true);
    expect(connected.verified).toMatchObject({ type: 'connection.changed', data: { tenantId: 'kiwi', platform: 'xero', state: 'connected', connection: fake.options.xeroTenantId } });

    // The platform refuses the grant at the next refresh: the chain is marked revoked, the tenant must reconnect.
    await waitForRun(rig.app.stores.runs, 'kiwi', { mode: 'full', requestedAt: 0, timeoutMs: 60_000 });
    fake.revokeAll();
    fake.expireAccessTokens();
    const requestedAt = Date.now();
    await rig.app.queues.sync.add(JOBS.sync.name, JOBS.sync.schema.parse({ tenantId: 'kiwi', mode: 'incremental', trigger: 'test', requestedAt }), { attempts: 1 });
    expect((await waitForRun(rig.app.stores.runs, 'kiwi', { mode: 'incremental', requestedAt, timeoutMs: 30_000 })).outcome).toBe('failed');
    const refused = await nthChange(2);
    expect(refused.valid).toBe(true);
    expect(refused.verified).toMatchObject({ data: { tenantId: 'kiwi', platform: 'xero', state: 'needs_reconnect', reason: expect.stringContaining('invalid_grant') as unknown } });

    // A reconnect link (kiwi has a connection, a broken one): connected again, a change of its own (another id).
    expect((await browse(await link(true))).status).toBe(200);
    const again = await nthChange(3);
    expect(again.verified).toMatchObject({ data: { state: 'connected' } });
    expect(again.headers['webhook-id']).not.toBe(connected.headers['webhook-id']);

    // connect revoke, from the CLI (it has the queues: it enqueues the event; the worker delivers it).
    const revoked = await cli(['connect', 'revoke', '--tenant', 'kiwi', '--yes']);
    expect(revoked.code, revoked.stderr).toBe(0);
    const gone = await nthChange(4);
    expect(gone.valid).toBe(true);
    expect(gone.verified).toMatchObject({ data: { tenantId: 'kiwi', state: 'revoked', connection: fake.options.xeroTenantId } });

    await new Promise((r) => setTimeout(r, 300));
    expect(changes()).toHaveLength(4);
    expect(new Set(changes().map((c) => c.headers['webhook-id'])).size).toBe(4);
    // The runs were told too: the first full run and the failed one.
    // (One delivery at a time per tenant: an event that found the tenant's lock taken comes a little later.)
    const outcomes = async (): Promise<string[]> =>
      receiver.received.filter((r) => (r.verified as { type?: string }).type === 'run.finished').map((r) => (r.verified as { data: { outcome: string } }).data.outcome);
    expect(await until(outcomes, (o) => o.includes('failed') && o.includes('succeeded'))).toEqual(expect.arrayContaining(['succeeded', 'failed']));
  });
});
