/**
 * Where a tenant's own run-webhook URL may connect (issue 36, finding 8b), one delivery attempt at a time over real
 * sockets on this machine: the address guard refuses loopback, private, link-local, multicast and other special
 * addresses in every spelling, judged on the address the connection is opened to, unless OUTBOUND_ALLOWED_NETWORKS
 * lists them; RUN_WEBHOOK_URL (the operator's) is not guarded. A failure is told as a class (refused, timeout, tls,
 * http 500, blocked address, dns), never with an address or a port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { parseNetworks } from '../../src/config/networks.js';
import { Secret } from '../../src/secret.js';
import { AddressGuard, BlockedAddressError, deliverEvent, embeddedIpv4, FAILURE_CLASSES, runFinishedEvent, type AttemptResult } from '../../src/notify/index.js';
import { freePort } from '../helpers/redis.js';
import { newSecret, startReceiver, type Receiver } from './receiver.js';

const event = runFinishedEvent({ tenantId: 'acme', runId: 'run-1', mode: 'full', trigger: 'test', outcome: 'succeeded', counts: {}, errors: [], startedAt: 1, finishedAt: 2 });
const LOCAL = parseNetworks('127.0.0.0/8, ::1').networks;

describe('the address guard', () => {
  it('refuses every address that is not the public internet, in every spelling, and allows what OUTBOUND_ALLOWED_NETWORKS lists', () => {
    const guard = new AddressGuard();
    const refused = [
      '127.0.0.1', '127.255.255.254', '10.0.0.5', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '239.255.255.250', '255.255.255.255', '192.0.0.8', '198.18.0.1',
      '::1', '::', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', 'ff02::1', 'fec0::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.5', '64:ff9b::a00:5', '64:ff9b::169.254.169.254', '2002:a00:5::1', '2002:7f00:1::', '::127.0.0.1',
    ];
    for (const a of refused) expect(guard.allows(a), a).toBe(false);
    const allowed = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'];
    for (const a of allowed) expect(guard.allows(a), a).toBe(true);
    expect(guard.allows('localhost')).toBe(false);
    const local = new AddressGuard(parseNetworks('127.0.0.0/8,fd00:1::/64 10.20.0.0/16').networks);
    for (const a of ['127.0.0.1', '::ffff:127.0.0.1', '10.20.3.4', 'fd00:1::7']) expect(local.allows(a), a).toBe(true);
    for (const a of ['10.21.0.1', '169.254.169.254', '::1', 'fd00:2::1']) expect(local.allows(a), a).toBe(false);
    expect(embeddedIpv4('::ffff:169.254.169.254')).toBe('169.254.169.254');
    expect(embeddedIpv4('2001:db8::1')).toBeUndefined();
  });

  it('judges a name by what it resolves to when the connection opens: localhost and short forms of 127.0.0.1 are refused', async () => {
    const guard = new AddressGuard();
    for (const host of ['localhost', '127.1', '0x7f.1', '[::1]', '2130706433']) await expect(guard.resolve(host), host).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(new AddressGuard(LOCAL).resolve('localhost')).resolves.toMatch(/^(127\.0\.0\.1|::1)$/);
  });

  it('OUTBOUND_ALLOWED_NETWORKS: CIDRs or addresses, a bad entry named by its number', () => {
    expect(loadEnv({}).OUTBOUND_ALLOWED_NETWORKS).toBeUndefined();
    expect(parseNetworks(loadEnv({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8, 10.0.0.7 fd00::/8' }).OUTBOUND_ALLOWED_NETWORKS ?? '').networks).toEqual([
      { address: '127.0.0.0', prefix: 8, family: 'ipv4' },
      { address: '10.0.0.7', prefix: 32, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
    ]);
    expect(() => loadEnv({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8,10.0.0.0/33,intranet' })).toThrow(/OUTBOUND_ALLOWED_NETWORKS: entry 2 \(10\.0\.0\.0\/33\): not a network[\s\S]*entry 3 \(intranet\)/);
  });
});

describe('a delivery attempt to a guarded target', () => {
  let receiver: Receiver;
  let failing: Receiver;
  let hanging: Receiver;
  let closedPort: number;
  let plain: Server;
  const secret = newSecret();
  const port = (r: Receiver): string => new URL(r.url).port;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    failing = await startReceiver(secret, () => 500);
    hanging = await startReceiver(secret, () => 'hang');
    closedPort = await freePort();
    plain = createServer((_req, res) => res.end('plain http'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await Promise.all([receiver.close(), failing.close(), hanging.close(), new Promise((r) => plain.close(r))]);
  });

  const attempt = (url: string, guard: AddressGuard | undefined, timeoutMs = 2_000): Promise<AttemptResult> =>
    deliverEvent(event, { url, secret: new Secret(secret), guarded: true }, { timeoutMs, userAgent: 'test', ...(guard ? { guard } : {}) });

  it('is refused to this machine, whatever the spelling, before anything is sent; delivered once the network is allowed', async () => {
    const p = port(receiver);
    for (const url of [receiver.url, `http://localhost:${p}/hooks/runs`, `http://127.1:${p}/hooks/runs`, `http://[::ffff:127.0.0.1]:${p}/hooks/runs`, `http://0x7f000001:${p}/hooks/runs`]) {
      expect(await attempt(url, new AddressGuard()), url).toMatchObject({ ok: false, error: 'blocked address' });
    }
    expect(await attempt('https://169.254.169.254/latest/meta-data/', new AddressGuard())).toMatchObject({ ok: false, error: 'blocked address' });
    expect(await attempt('https://10.0.0.5:6379/', new AddressGuard())).toMatchObject({ ok: false, error: 'blocked address' });
    // No guard given for a guarded target: refused all the same.
    expect(await attempt(receiver.url, undefined)).toMatchObject({ ok: false, error: 'blocked address' });
    expect(receiver.received).toHaveLength(0);
    expect(await attempt(`http://localhost:${p}/hooks/runs`, new AddressGuard(LOCAL))).toMatchObject({ ok: true, statusCode: 204 });
    expect(await attempt(`http://127.1:${p}/hooks/runs`, new AddressGuard(LOCAL))).toMatchObject({ ok: true, statusCode: 204 });
    expect(receiver.received.map((r) => r.valid)).toEqual([true, true]);
  });

  it('tells a failure by its class only: refused, timeout, tls, http 500, dns; never an address or a port', async () => {
    const guard = new AddressGuard(LOCAL);
    const results = {
      refused: await attempt(`http://127.0.0.1:${closedPort}/x`, guard),
      timeout: await attempt(hanging.url, guard, 300),
      tls: await attempt(`https://127.0.0.1:${(plain.address() as AddressInfo).port}/x`, guard),
      'http 500': await attempt(failing.url, guard),
      dns: await attempt('https://no-such-host.invalid/x', guard),
    };
    for (const [cls, r] of Object.entries(results)) {
      expect(r.ok, cls).toBe(false);
      expect(r.error, cls).toBe(cls);
      expect([...FAILURE_CLASSES, 'http 500']).toContain(r.error);
    }
    expect(results['http 500'].statusCode).toBe(500);
  });

  it('RUN_WEBHOOK_URL (not guarded) reaches this machine without OUTBOUND_ALLOWED_NETWORKS', async () => {
    const before = receiver.received.length;
    const r = await deliverEvent(event, { url: receiver.url, secret: new Secret(secret), guarded: false }, { timeoutMs: 2_000, userAgent: 'test', guard: new AddressGuard() });
    expect(r).toMatchObject({ ok: true, statusCode: 204 });
    expect(receiver.received).toHaveLength(before + 1);
  });
});
