/**
 * The stored tenants' change log (src/state/tenant-store.ts) on a real Redis: a second process reads only what
 * changed since it last looked, a removal reaches it, one whose missed removals were trimmed from the log reads
 * everything again, and a document never sits in Redis with a secret in plain text.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import type { Logger } from '../../src/logger.js';
import { purgeRemovedTenants, purgeTenantState } from '../../src/state/purge.js';
import { TenantStore } from '../../src/state/tenant-store.js';
import { DEFAULT_OWNERS, runEveryScript } from '../helpers/every-script.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const SECRET = 'store-client-secret-Vb8Nq3Lx';
const entry = (id: string, inFlightLimit?: number) => ({
  id,
  collections: { clientId: `client-${id}`, clientSecret: SECRET },
  platform: { kind: 'memory', name: id },
  ...(inFlightLimit === undefined ? {} : { inFlightLimit }),
});

describe('TenantStore change log', () => {
  const redis = useTestRedis();
  let client: Redis;
  const box = TokenCipher.fromText(TOKEN_KEY);
  beforeAll(() => {
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    await client?.quit();
  });

  it('tells a second process what changed since it last looked, and nothing when nothing did', async () => {
    const prefix = testPrefix('tstore');
    const writer = new TenantStore(client, prefix, box);
    const reader = new TenantStore(client, prefix, box);
    await writer.refresh();
    expect(await reader.refresh()).toEqual([]);
    expect(await reader.sync()).toEqual([]);

    await writer.create(entry('t1'));
    await writer.create(entry('t2'));
    expect((await reader.sync()).sort()).toEqual(['t1', 't2']);
    expect(reader.get('t2')?.config.collections.clientSecret.reveal()).toBe(SECRET);
    expect(await reader.sync()).toEqual([]);

    expect((await writer.patch('t1', { inFlightLimit: 3 })).kind).toBe('patched');
    expect(await reader.sync()).toEqual(['t1']);
    expect(reader.get('t1')?.config.inFlightLimit).toBe(3);

    expect(await writer.remove('t2')).toBe(true);
    expect(await reader.sync()).toEqual(['t2']);
    expect(reader.get('t2')).toBeUndefined();
    // Created again under the same id: known again.
    await writer.create(entry('t2', 5));
    expect(await reader.sync()).toEqual(['t2']);
    expect(reader.get('t2')?.config.inFlightLimit).toBe(5);
    expect(reader.list().map((t) => t.config.id)).toEqual(['t1', 't2']);

    // No secret in plain text in any of the store's keys.
    const keys = await client.keys(`${prefix.replace(/[{}]/g, '')}:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      const type = await client.type(key);
      const text = type === 'hash' ? JSON.stringify(await client.hgetall(key)) : type === 'zset' ? JSON.stringify(await client.zrange(key, 0, -1)) : String(await client.get(key));
      expect(text, key).not.toContain(SECRET);
    }
  });

  it('reads everything again when the removals it missed were trimmed from the log', async () => {
    const prefix = testPrefix('tstore');
    const writer = new TenantStore(client, prefix, box, { removedKept: 2 });
    const reader = new TenantStore(client, prefix, box);
    for (const id of ['a1', 'a2', 'a3', 'a4']) await writer.create(entry(id));
    expect((await reader.refresh()).sort()).toEqual(['a1', 'a2', 'a3', 'a4']);
    // Three removals while the reader does not look: the log keeps two, so the first is known only by its absence.
    for (const id of ['a1', 'a2', 'a3']) await writer.remove(id);
    expect((await reader.sync()).sort()).toEqual(['a1', 'a2', 'a3']);
    expect(reader.list().map((t) => t.config.id)).toEqual(['a4']);
    expect(await client.zcard(writer.indexKey().replace(/:index$/, ':removed'))).toBe(2);
  });

  it('files a create that stopped before it was filed when the id is created again (it is then taken)', async () => {
    const prefix = testPrefix('tstore');
    const writer = new TenantStore(client, prefix, box);
    const reader = new TenantStore(client, prefix, box);
    await writer.create(entry('b1'));
    await reader.refresh();
    // As if the process had stopped between the document and its filing: the filing undone.
    await client.zrem(writer.indexKey(), 'b1');
    const other = new TenantStore(client, prefix, box);
    await other.refresh();
    expect(other.get('b1')).toBeUndefined();
    expect((await other.create(entry('b1'))).kind).toBe('exists');
    await other.sync();
    expect(other.get('b1')?.config.id).toBe('b1');
  });

  // Purging a removed tenant: on the same Redis and cipher.

  it("deletes every key of the tenant's state, and nothing of another owner, a queue or the store", async () => {
    const prefix = testPrefix('purge');
    const base = prefix.replace(/[{}]/g, '');
    // Every room's scripts write the state of `gone` (and of its client, connection and campaign)...
    await runEveryScript(client, prefix, { ...DEFAULT_OWNERS, tenant: 'gone' });
    // ...and of another tenant; a queue's key whose tag is the tenant's name; the store's own keys.
    await runEveryScript(client, prefix, { tenant: 'stay', client: 'client-2', connection: 'org-2', app: 'app-2', campaign: 'cmp-b' });
    await client.set(`${base}:{gone}:meta`, 'a queue of that name');
    const store = new TenantStore(client, prefix, box);
    await store.create(entry('gone'));
    const before = await client.keys(`${base}:*`);
    const owned = before.filter((k) => /:\{gone\}(:|$)/.test(k) && !k.startsWith(`${base}:{`) && !k.startsWith(`${base}:tenant:`));
    expect(owned.length).toBeGreaterThan(10);

    expect(await purgeTenantState(client, prefix, 'gone')).toBe(owned.length);
    const after = await client.keys(`${base}:*`);
    expect(after.filter((k) => owned.includes(k))).toEqual([]);
    expect(after.sort()).toEqual(before.filter((k) => !owned.includes(k)).sort());
    expect(after).toContain(`${base}:{gone}:meta`);
    expect(after.some((k) => k.includes('{stay}'))).toBe(true);
    expect(store.get('gone')).toBeDefined();
  });

  it('housekeeping purges tenants removed longer ago than the retention, not those stored again', async () => {
    const prefix = testPrefix('purge');
    const store = new TenantStore(client, prefix, box);
    for (const id of ['old', 'back']) {
      await store.create(entry(id));
      await client.hset(`${prefix.replace(/[{}]/g, '')}:cursors:{${id}}`, 'contacts', 'x');
      await store.remove(id);
    }
    await store.create(entry('back'));
    const logs: unknown[] = [];
    const logger = { info: (o: unknown) => logs.push(o) } as unknown as Logger;
    const o = { redis: client, env: { KEY_PREFIX: prefix }, tenantStore: store, tenant: (id: string) => store.get(id), logger };
    // Within the retention: nothing.
    expect(await purgeRemovedTenants(o, Date.now() - 60_000)).toBe(0);
    expect(await purgeRemovedTenants(o, Date.now() + 1)).toBe(1);
    expect(await client.exists(`${prefix.replace(/[{}]/g, '')}:cursors:{old}`)).toBe(0);
    expect(await client.exists(`${prefix.replace(/[{}]/g, '')}:cursors:{back}`)).toBe(1);
    expect(await store.removedBefore(Date.now() + 1)).toEqual([]);
    expect(logs).toHaveLength(1);
  });
});
