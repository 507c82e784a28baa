/**
 * Security review, finding 5: the connect routes count failed link checks only, per client address, and a valid
 * link is never refused by that count. Behind the TLS proxy every customer shares the proxy's address: with
 * TRUST_PROXY (hops, or the proxies' CIDRs) the client is the address the proxy forwarded, and a client cannot pass
 * itself off as another by a forged X-Forwarded-For. Without TRUST_PROXY the header is not believed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientAddressOf } from '../../src/client-address.js';
import { loadEnv, trustProxyOf } from '../../src/config/env.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';
import { freePort, linkOf } from './browser.js';

const RATE = 5;
const kiwi = { id: 'kiwi', platform: { kind: 'xero', clientId: 'XEROCLIENT', clientSecret: 'xero-secret', authorizeUrl: 'http://127.0.0.1:9/authorize' } };

/** A rig serving connect links on 127.0.0.1 with CONNECT_RATE_PER_MIN=5 and these settings. */
async function connectRig(redisUrl: string, env: Record<string, string>): Promise<{ rig: Rig; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const rig = await startRig({
    redisUrl,
    tenants: [kiwi],
    env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: base, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', CONNECT_RATE_PER_MIN: String(RATE), ...env },
    worker: { opsPort: 0, schedules: false },
  });
  return { rig, base };
}

const status = async (url: string, headers: Record<string, string> = {}): Promise<number> => {
  const res = await fetch(url, { redirect: 'manual', headers });
  await res.body?.cancel();
  return res.status;
};

describe('failed connect checks, counted per client address (no proxy trusted)', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let base: string;
  beforeAll(async () => ({ rig, base } = await connectRig(redis.url, {})));
  afterAll(async () => rig?.close());

  it('30 garbage links, then a valid one: the valid one goes to the consent screen; garbage past the count gets 429', async () => {
    const answers: number[] = [];
    for (let i = 0; i < 30; i += 1) answers.push(await status(`${base}/connect/garbage-${i}`, { 'x-forwarded-for': `198.51.100.${i}` }));
    // A forged X-Forwarded-For is not believed: all 30 are this socket's address.
    expect(answers.slice(0, RATE)).toEqual(Array<number>(RATE).fill(401));
    expect(new Set(answers.slice(RATE))).toEqual(new Set([429]));
    expect(await status((await linkOf(rig, 'kiwi')).url)).toBe(302);
    expect(await status(`${base}/oauth/callback?state=nope&code=x`)).toBe(429);
  });
});

describe('failed connect checks behind a trusted proxy (TRUST_PROXY=1)', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let base: string;
  beforeAll(async () => ({ rig, base } = await connectRig(redis.url, { TRUST_PROXY: '1' })));
  afterAll(async () => rig?.close());

  it('counts each forwarded client apart: one that guesses is refused, the others and valid links are not', async () => {
    const from = (ip: string): Record<string, string> => ({ 'x-forwarded-for': ip });
    const a: number[] = [];
    for (let i = 0; i < 10; i += 1) a.push(await status(`${base}/connect/guess-${i}`, from('203.0.113.7')));
    expect(a).toEqual([...Array<number>(RATE).fill(401), ...Array<number>(10 - RATE).fill(429)]);
    // Another customer behind the same proxy: a typo is a 401, and a valid link works.
    expect(await status(`${base}/connect/typo`, from('203.0.113.8'))).toBe(401);
    expect(await status((await linkOf(rig, 'kiwi')).url, from('203.0.113.8'))).toBe(302);
    // The guesser's own valid link still works.
    expect(await status((await linkOf(rig, 'kiwi')).url, from('203.0.113.7'))).toBe(302);
    // It cannot pass itself off as the other customer: the proxy appends the address it saw, and that one counts.
    expect(await status(`${base}/connect/guess-x`, from('203.0.113.8, 203.0.113.7'))).toBe(429);
  });
});

describe('TRUST_PROXY', () => {
  const trust = (env: Record<string, string>) => trustProxyOf(loadEnv(env));
  it('is off by default; takes a number of hops or a list of CIDRs; refuses anything else, naming it', () => {
    expect(trust({})).toEqual({ kind: 'off' });
    expect(trust({ TRUST_PROXY: 'false' })).toEqual({ kind: 'off' });
    expect(trust({ TRUST_PROXY: '2' })).toEqual({ kind: 'hops', hops: 2 });
    expect(trust({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.4,fd00::/8' })).toEqual({ kind: 'cidrs', cidrs: ['10.0.0.0/8', '192.168.1.4/32', 'fd00::/8'] });
    for (const bad of ['yes', '0.5', '11', '10.0.0.0/33', '10.0.0.300', 'proxy.example.com', '10.0.0.0/8,']) {
      expect(() => loadEnv({ TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY/);
    }
  });

  it('picks the client the trusted proxies forwarded (hops from the right, or past every trusted address)', () => {
    const off = trust({});
    const one = trust({ TRUST_PROXY: '1' });
    const two = trust({ TRUST_PROXY: '2' });
    const cidrs = trust({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' });
    expect(clientAddressOf('10.0.0.2', '203.0.113.7', off)).toBe('10.0.0.2');
    expect(clientAddressOf('::ffff:10.0.0.2', undefined, one)).toBe('10.0.0.2');
    expect(clientAddressOf('10.0.0.2', '198.51.100.1, 203.0.113.7', one)).toBe('203.0.113.7');
    expect(clientAddressOf('10.0.0.2', '198.51.100.1, 203.0.113.7', two)).toBe('198.51.100.1');
    // Fewer entries than hops: the leftmost there is.
    expect(clientAddressOf('10.0.0.2', '203.0.113.7', two)).toBe('203.0.113.7');
    expect(clientAddressOf('127.0.0.1', '198.51.100.1, 203.0.113.7, 10.1.2.3', cidrs)).toBe('203.0.113.7');
    // A peer that is no trusted proxy: its header is not believed.
    expect(clientAddressOf('192.0.2.9', '203.0.113.7', cidrs)).toBe('192.0.2.9');
    // Garbage in the header stops the walk at the last address the proxies vouched for.
    expect(clientAddressOf('10.0.0.2', 'not-an-ip', one)).toBe('10.0.0.2');
    // IPv6 clients are counted by their /64 (one host has a whole /64 to itself).
    expect(clientAddressOf('10.0.0.2', '2001:db8:1:2:aaaa::1', one)).toBe('2001:db8:1:2::/64');
  });
});
