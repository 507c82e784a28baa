import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/index.js';
import { createLogger } from '../../src/logger.js';
import { createAdapter, MemoryAdapter, writeNdjson, MemoryPlatform, MemoryPlatformRegistry, memoryPlatforms, PlatformError, PlatformRateLimitedError } from '../../src/platforms/index.js';
import { contact, invoice, readAll } from './fixtures.js';

const silent = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

describe('memory adapter', () => {
  it('pages in (updatedAt, id) order whatever the insertion order', async () => {
    const store = new MemoryPlatform();
    const records = Array.from({ length: 50 }, (_, i) => contact(i, { updatedAt: `2026-01-01T00:00:${String(i % 7).padStart(2, '0')}Z` }));
    for (const r of [...records].reverse()) store.upsert('contacts', r);
    const pages = await readAll(new MemoryAdapter(store), 'contacts', { pageSize: 6 });
    const got = pages.flatMap((p) => p.records.map((r) => `${r.updatedAt} ${r.id}`));
    expect(got).toHaveLength(50);
    expect(got).toEqual([...got].sort());
    expect(pages.every((p) => p.ordered)).toBe(true);
  });

  it('splits records sharing one updatedAt across pages without losing or repeating any', async () => {
    const store = new MemoryPlatform();
    const same = '2026-05-05T05:05:05Z';
    store.upsertMany('invoices', Array.from({ length: 23 }, (_, i) => invoice(i, { updatedAt: same })));
    store.upsert('invoices', invoice(100, { updatedAt: '2026-05-05T05:05:04Z' }));
    store.upsert('invoices', invoice(101, { updatedAt: '2026-05-05T05:05:06Z' }));
    for (const pageSize of [1, 4, 5, 25, 500]) {
      const pages = await readAll(new MemoryAdapter(store), 'invoices', { pageSize });
      const ids = pages.flatMap((p) => p.records.map((r) => r.id));
      expect(ids).toHaveLength(25);
      expect(new Set(ids).size).toBe(25);
      expect(ids[0]).toBe('INV-000100');
      expect(ids.at(-1)).toBe('INV-000101');
    }
  });

  it('treats `since` as inclusive in (updatedAt, id) order', async () => {
    const store = new MemoryPlatform();
    const t = '2026-02-02T02:02:02Z';
    for (const id of ['a', 'b', 'c']) store.upsert('contacts', contact(0, { id, updatedAt: t }));
    store.upsert('contacts', contact(0, { id: 'z', updatedAt: '2026-02-02T02:02:01Z' }));
    // The same instant written with an offset still compares equal.
    const page = await new MemoryAdapter(store).readPage('contacts', { since: { updatedAt: '2026-02-02T05:02:02+03:00', id: 'b' } });
    expect(page.records.map((r) => r.id)).toEqual(['b', 'c']);
    expect(page.nextPageToken).toBeUndefined();
  });

  it('sees changes made between pages: a record updated after the token is read again later', async () => {
    const store = new MemoryPlatform();
    store.upsertMany('contacts', Array.from({ length: 6 }, (_, i) => contact(i)));
    const adapter = new MemoryAdapter(store);
    const first = await adapter.readPage('contacts', { pageSize: 3 });
    store.upsert('contacts', contact(0, { name: 'Moved', updatedAt: '2027-01-01T00:00:00Z' }));
    const rest = await adapter.readPage('contacts', { pageSize: 10, pageToken: first.nextPageToken! });
    expect(rest.records.map((r) => r.id)).toEqual(['C-000003', 'C-000004', 'C-000005', 'C-000000']);
    expect(rest.records.at(-1)!.name).toBe('Moved');
  });

  it('reports bad records with place memory:<entity>#<id>, in order, and unplaced ones on the first page', async () => {
    const store = new MemoryPlatform();
    store.upsert('contacts', contact(1));
    store.upsert('contacts', contact(2, { name: '' }));
    store.upsert('contacts', contact(3, { updatedAt: 'yesterday' }));
    store.upsert('contacts', contact(4));
    const adapter = new MemoryAdapter(store);
    const first = await adapter.readPage('contacts', { pageSize: 2 });
    expect(first.bad.map((b) => [b.place, b.platformId, b.reason.split(':')[0]])).toEqual([
      ['memory:contacts#C-000003', 'C-000003', 'updatedAt'],
      ['memory:contacts#C-000002', 'C-000002', 'name'],
    ]);
    expect(first.records.map((r) => r.id)).toEqual(['C-000001']);
    const second = await adapter.readPage('contacts', { pageSize: 2, pageToken: first.nextPageToken! });
    expect(second.records.map((r) => r.id)).toEqual(['C-000004']);
    expect(second.bad).toEqual([]);
    expect(second.nextPageToken).toBeUndefined();
  });

  it('stores copies, and returns copies', async () => {
    const store = new MemoryPlatform();
    const rec = contact(1);
    store.upsert('contacts', rec);
    rec['name'] = 'changed outside';
    const page = await new MemoryAdapter(store).readPage('contacts', {});
    page.records[0]!.name = 'changed by a caller';
    expect(store.get('contacts', 'C-000001')!['name']).toBe('Customer 1');
    expect((await new MemoryAdapter(store).readPage('contacts', {})).records[0]!.name).toBe('Customer 1');
    expect(store.remove('contacts', 'C-000001')).toBe(true);
    expect(store.all('contacts')).toEqual([]);
  });

  it('throws a queued failure once, on the next readPage of that entity', async () => {
    const store = new MemoryPlatform();
    store.upsert('invoices', invoice(1));
    const adapter = new MemoryAdapter(store);
    const limit = new PlatformRateLimitedError('minute', 1500, 'simulated: 60 calls a minute');
    store.failNext('invoices', limit);
    expect((await adapter.readPage('contacts', {})).records).toEqual([]);
    await expect(adapter.readPage('invoices', {})).rejects.toBe(limit);
    expect((await adapter.readPage('invoices', {})).records).toHaveLength(1);
  });

  it('refuses a token it did not issue', async () => {
    await expect(new MemoryAdapter(new MemoryPlatform()).readPage('contacts', { pageToken: 'x' })).rejects.toBeInstanceOf(PlatformError);
  });
});

describe('createAdapter', () => {
  const env = { SECRET: 's' };
  const tenants = (platform: object): Parameters<typeof createAdapter>[0] =>
    parseTenants(JSON.stringify({ tenants: [{ id: 'acme', collections: { clientId: 'c', clientSecret: '${SECRET}' }, platform }] }), env).tenants[0]!.platform;

  it('finds a memory store by the name in the tenants file', async () => {
    const registry = new MemoryPlatformRegistry();
    registry.get('shop').upsert('contacts', contact(7));
    const adapter = createAdapter(tenants({ kind: 'memory', name: 'shop' }), { logger: silent, memoryPlatforms: registry });
    expect(adapter.kind).toBe('memory');
    expect((await adapter.readPage('contacts', {})).records.map((r) => r.id)).toEqual(['C-000007']);
    // Without a registry of its own, the process's registry is used.
    memoryPlatforms.get('create-adapter-test').upsert('contacts', contact(8));
    const viaProcess = createAdapter(tenants({ kind: 'memory', name: 'create-adapter-test' }), { logger: silent });
    expect((await viaProcess.readPage('contacts', {})).records.map((r) => r.id)).toEqual(['C-000008']);
    memoryPlatforms.delete('create-adapter-test');
  });

  it('builds a file adapter over the configured folder, loaded on its first read', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'cs-lazy-'));
    try {
      await writeNdjson(join(folder, 'contacts.ndjson'), [contact(9)]);
      const adapter = createAdapter(tenants({ kind: 'file', path: folder }), { logger: silent });
      expect(adapter.kind).toBe('file');
      expect((await adapter.readPage('contacts', {})).records.map((r) => r.id)).toEqual(['C-000009']);
      await adapter.close?.();
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('says clearly what a xero tenant needs when its encryption key is missing', () => {
    const xero = tenants({ kind: 'xero', clientId: 'x', clientSecret: '${SECRET}', refreshToken: '${SECRET}', xeroTenantId: 't' });
    expect(() => createAdapter(xero, { logger: silent })).toThrow(/needs PLATFORM_TOKEN_KEY/);
  });
});
