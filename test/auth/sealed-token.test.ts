/**
 * The service token at rest (issue 28 item 5): with PLATFORM_TOKEN_KEY it is sealed with the platform tokens'
 * cipher, so Redis holds no usable token; a value stored in plain text before the key was set is still read; one
 * sealed under another key is handed to nobody and is rotated through the protocol (compare-and-refresh by
 * generation), after which the new token is sealed under the current key. Real Redis, the real refresher.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ClientAuthStore, SEALED_PREFIX } from '../../src/auth/index.js';
import { Secret } from '../../src/secret.js';
import { TokenCipher } from '../../src/platforms/oauth/index.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { buildRig, redisAt, type AuthRig } from './harness.js';

const KEY_A = TokenCipher.fromText(randomBytes(32).toString('base64'));
const KEY_B = TokenCipher.fromText(randomBytes(32).toString('base64'));
const tenant = { id: 'acme', collections: { clientId: 'acme-client', clientSecret: new Secret('acme-secret-123') } };

describe('the service token is sealed at rest when PLATFORM_TOKEN_KEY is set', () => {
  const redis = useTestRedis();
  const rigs: AuthRig[] = [];
  afterAll(async () => {
    for (const r of rigs) await r.close().catch(() => undefined);
  });

  let issued = 0;
  const rig = async (prefix: string, tokenBox: TokenCipher | undefined): Promise<AuthRig> => {
    const r = await buildRig({
      url: redis.url,
      prefix,
      settings: { leaseHoldMs: 0, acquireTimeoutMs: 10_000 },
      requestToken: async () => ({ accessToken: `service-token-${++issued}` }),
      credentials: () => ({ clientId: tenant.collections.clientId, clientSecret: tenant.collections.clientSecret, authUrl: 'http://127.0.0.1:1' }),
      ...(tokenBox ? { tokenBox } : {}),
    });
    rigs.push(r);
    return r;
  };

  it('stores a sealed token, leases the plain one, and keeps the protocol (one rotation, generation 1)', async () => {
    const prefix = testPrefix('sealed');
    const r = await rig(prefix, KEY_A);
    const lease = await r.auth.providerFor(tenant).acquire();
    expect(lease.token).toMatch(/^service-token-\d+$/);
    expect(lease.version).toBe(1);
    await lease.release();
    const store = new ClientAuthStore(r.redis, prefix, r.auth.clientKeyOf(tenant));
    const raw = await r.redis.hget(store.keys.token, 'token');
    expect(raw?.startsWith(SEALED_PREFIX)).toBe(true);
    expect(raw).not.toContain(lease.token);
    expect((await store.status()).leases).toBe(0);
  });

  it('reads a token stored in plain text before the key was set, then seals the next one', async () => {
    const prefix = testPrefix('legacy');
    const plain = await rig(prefix, undefined);
    const first = await plain.auth.providerFor(tenant).acquire();
    await first.release();
    const store = new ClientAuthStore(plain.redis, prefix, plain.auth.clientKeyOf(tenant));
    expect(await plain.redis.hget(store.keys.token, 'token')).toBe(first.token);
    await plain.close(); // the fleet restarts with the key set
    const sealed = await rig(prefix, KEY_A);
    const again = await sealed.auth.providerFor(tenant).acquire();
    expect(again).toMatchObject({ token: first.token, version: first.version });
    await again.release();
    // A 401 on it rotates it once (compare-and-refresh); the new one is sealed.
    await sealed.auth.providerFor(tenant).rejected(again, 'expired');
    const next = await sealed.auth.providerFor(tenant).acquire();
    expect(next.version).toBe(first.version + 1);
    await next.release();
    expect((await sealed.redis.hget(store.keys.token, 'token'))?.startsWith(SEALED_PREFIX)).toBe(true);
  });

  it('rotates a token sealed under another key instead of handing it out', async () => {
    const prefix = testPrefix('rekeyed');
    const a = await rig(prefix, KEY_A);
    const old = await a.auth.providerFor(tenant).acquire();
    await old.release();
    await a.close(); // the fleet restarts with another key
    const b = await rig(prefix, KEY_B);
    const lease = await b.auth.providerFor(tenant).acquire();
    expect(lease.version).toBe(old.version + 1);
    expect(lease.token).not.toBe(old.token);
    expect(lease.token).toMatch(/^service-token-\d+$/);
    await lease.release();
    const connection = await redisAt(redis.url);
    const direct = new ClientAuthStore(connection, prefix, b.auth.clientKeyOf(tenant), KEY_A);
    // The old key no longer reads it: what is stored is sealed under the new one.
    expect(await direct.acquire('probe', 1_000, 10, 'fp')).toEqual({ kind: 'unreadable', version: lease.version });
    expect(await direct.leaseCount()).toBe(0);
    connection.disconnect();
  });
});
