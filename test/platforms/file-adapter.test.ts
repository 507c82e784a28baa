import { appendFile, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileAdapter, decodeFileToken, writeNdjson } from '../../src/platforms/file/index.js';
import { PlatformError } from '../../src/platforms/types.js';
import { contact, invoice, payment, readAll, tempDir } from './fixtures.js';

let dir: { path: string; remove: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await dir.remove();
});

const lines = (...objs: unknown[]): string => objs.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n') + '\n';

describe('file adapter: paging', () => {
  it('gives every record exactly once across pages, resuming from each page token', async () => {
    const n = 1234;
    await writeNdjson(join(dir.path, 'contacts.ndjson'), (function* () {
      for (let i = 0; i < n; i++) yield contact(i);
    })());
    const adapter = new FileAdapter({ folder: dir.path });
    const pages = await readAll(adapter, 'contacts', { pageSize: 100 });

    expect(pages).toHaveLength(13);
    expect(pages.slice(0, 12).every((p) => p.records.length === 100 && p.nextPageToken !== undefined)).toBe(true);
    expect(pages[12]!.records).toHaveLength(34);
    expect(pages[12]!.nextPageToken).toBeUndefined();
    const ids = pages.flatMap((p) => p.records.map((r) => r.id));
    expect(new Set(ids).size).toBe(n);
    expect(ids).toEqual(Array.from({ length: n }, (_, i) => contact(i)['id']));
    expect(pages.every((p) => p.ordered === false && p.bad.length === 0)).toBe(true);
  });

  it('uses 500 as the default page size, and resumes the same from a stored token', async () => {
    await writeNdjson(join(dir.path, 'invoices.ndjson'), Array.from({ length: 501 }, (_, i) => invoice(i)));
    const adapter = new FileAdapter({ folder: dir.path });
    const first = await adapter.readPage('invoices', {});
    expect(first.records).toHaveLength(500);
    expect(decodeFileToken(first.nextPageToken!).line).toBe(500);
    // A fresh adapter (another process) resumes from the same token.
    const second = await new FileAdapter({ folder: dir.path }).readPage('invoices', { pageToken: first.nextPageToken! });
    expect(second.records.map((r) => r.id)).toEqual(['INV-000500']);
    expect(second.nextPageToken).toBeUndefined();
  });

  it('treats a missing file as an empty listing', async () => {
    const page = await new FileAdapter({ folder: dir.path }).readPage('payments', {});
    expect(page).toEqual({ records: [], bad: [], ordered: false });
  });

  it('keeps only records at or after `since` in (updatedAt, id) order, silently', async () => {
    const t0 = '2026-03-01T10:00:00Z';
    await writeFile(join(dir.path, 'contacts.ndjson'), lines(
      contact(1, { id: 'B', updatedAt: '2026-03-01T09:59:59Z' }),
      contact(2, { id: 'A', updatedAt: t0 }),
      contact(3, { id: 'B', updatedAt: '2026-03-01T13:00:00+03:00' }), // the same instant as t0
      contact(4, { id: 'C', updatedAt: t0 }),
      contact(5, { id: 'A', updatedAt: '2026-03-02T00:00:00Z' }),
      contact(6, { id: 'Z', updatedAt: '2026-01-01T00:00:00Z', name: '' }), // bad, but before since: an earlier run reported it
    ));
    const pages = await readAll(new FileAdapter({ folder: dir.path }), 'contacts', { since: { updatedAt: t0, id: 'B' }, pageSize: 2 });
    const got = pages.flatMap((p) => p.records.map((r) => `${r.id}@${r.updatedAt}`));
    expect(got).toEqual(['B@2026-03-01T13:00:00+03:00', 'C@2026-03-01T10:00:00Z', 'A@2026-03-02T00:00:00Z']);
    expect(pages.flatMap((p) => p.bad)).toEqual([]);
  });

  it('ends a page after the line budget even when `since` skips everything, and still ends the listing', async () => {
    await writeNdjson(join(dir.path, 'contacts.ndjson'), Array.from({ length: 95 }, (_, i) => contact(i)));
    const adapter = new FileAdapter({ folder: dir.path, maxLinesPerPage: 10 });
    const pages = await readAll(adapter, 'contacts', { since: { updatedAt: '2030-01-01T00:00:00Z', id: '' } });
    expect(pages).toHaveLength(10);
    expect(pages.every((p) => p.records.length === 0)).toBe(true);
  });
});

describe('file adapter: bad records', () => {
  it('reports each bad line with file, line number and reason, and passes the good ones', async () => {
    const long = 'x'.repeat(256);
    await writeFile(join(dir.path, 'contacts.ndjson'), lines(
      contact(1),
      '{"id": "C-2", "name": "Broken", ',
      contact(3, { name: long }),
      contact(4, { email: 'not-an-email' }),
      { id: 'C-5', updatedAt: '2026-01-01T00:00:00Z' },
      contact(6, { updatedAt: '2026-01-01 10:00' }),
      [1, 2, 3],
      contact(8, { id: 42 }),
      contact(9),
    ));
    await writeFile(join(dir.path, 'invoices.ndjson'), lines(
      invoice(1, { total: -5 }),
      invoice(2, { dueDate: '2026-02-30' }),
      invoice(3, { outstandingAmount: 150 }),
      invoice(4, { status: 'SENT' }),
      invoice(5),
    ));
    const adapter = new FileAdapter({ folder: dir.path });

    const contacts = await adapter.readPage('contacts', {});
    expect(contacts.records.map((r) => r.id)).toEqual(['C-000001', 'C-000004', 'C-000009']);
    // A bad optional field is not a bad record: the mapper drops it later.
    expect(contacts.records[1]!.email).toBe('not-an-email');
    const bad = Object.fromEntries(contacts.bad.map((b) => [b.place, b]));
    expect(Object.keys(bad)).toEqual(['contacts.ndjson:2', 'contacts.ndjson:3', 'contacts.ndjson:5', 'contacts.ndjson:6', 'contacts.ndjson:7', 'contacts.ndjson:8']);
    expect(bad['contacts.ndjson:2']!.reason).toMatch(/^invalid JSON: /);
    expect(bad['contacts.ndjson:2']!.platformId).toBeUndefined();
    expect(bad['contacts.ndjson:3']).toMatchObject({ entity: 'contacts', platformId: 'C-000003' });
    expect(bad['contacts.ndjson:3']!.reason).toMatch(/^name: .*255/);
    expect(bad['contacts.ndjson:3']!.reason).not.toContain(long); // values are never quoted
    expect(bad['contacts.ndjson:5']).toMatchObject({ platformId: 'C-5', reason: 'name: required' });
    expect(bad['contacts.ndjson:6']!.reason).toMatch(/^updatedAt: /);
    expect(bad['contacts.ndjson:7']!.reason).toMatch(/^\(record\): /);
    expect(bad['contacts.ndjson:8']!.reason).toMatch(/^id: /);
    expect(bad['contacts.ndjson:8']!.platformId).toBeUndefined();

    const invoices = await adapter.readPage('invoices', {});
    expect(invoices.records.map((r) => r.id)).toEqual(['INV-000005']);
    expect(invoices.bad.map((b) => [b.place, b.platformId, b.reason.split(':')[0]])).toEqual([
      ['invoices.ndjson:1', 'INV-000001', 'total'],
      ['invoices.ndjson:2', 'INV-000002', 'dueDate'],
      ['invoices.ndjson:3', 'INV-000003', 'outstandingAmount'],
      ['invoices.ndjson:4', 'INV-000004', 'status'],
    ]);
  });

  it('says a value has the wrong type instead of calling it missing', async () => {
    await writeFile(join(dir.path, 'invoices.ndjson'), lines(invoice(1, { total: 'abc' }), invoice(2, { total: undefined })));
    const page = await new FileAdapter({ folder: dir.path }).readPage('invoices', {});
    expect(page.bad.map((b) => [b.platformId, b.reason])).toEqual([
      ['INV-000001', 'total: Invalid input: expected number, received string'],
      ['INV-000002', 'total: required'],
    ]);
  });

  it('lists every issue of a record, each as `field: message`', async () => {
    await writeFile(join(dir.path, 'payments.ndjson'), lines(payment(1, { amount: 0, date: 'yesterday', paymentUuid: 'nope' })));
    const page = await new FileAdapter({ folder: dir.path }).readPage('payments', {});
    expect(page.bad).toHaveLength(1);
    const fields = page.bad[0]!.reason.split('; ').map((part) => part.split(':')[0]);
    expect(fields.sort()).toEqual(['amount', 'date', 'paymentUuid']);
  });

  it('counts bad lines toward the page size and resumes after them', async () => {
    await writeFile(join(dir.path, 'contacts.ndjson'), lines(contact(1), 'nope', 'nope', contact(4), 'nope', contact(6)));
    const pages = await readAll(new FileAdapter({ folder: dir.path }), 'contacts', { pageSize: 2 });
    expect(pages.map((p) => [p.records.map((r) => r.id), p.bad.map((b) => b.place)])).toEqual([
      [['C-000001'], ['contacts.ndjson:2']],
      [['C-000004'], ['contacts.ndjson:3']],
      [['C-000006'], ['contacts.ndjson:5']],
    ]);
  });

  it('reports an over-long line and invalid UTF-8 without holding them', async () => {
    const path = join(dir.path, 'contacts.ndjson');
    await writeFile(path, lines(contact(1), contact(2, { notes: 'y'.repeat(5000) })));
    await appendFile(path, Buffer.concat([Buffer.from('{"id":"C-3","name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]));
    await appendFile(path, lines(contact(4)));
    const page = await new FileAdapter({ folder: dir.path, maxLineBytes: 1000, highWaterMark: 256 }).readPage('contacts', {});
    expect(page.records.map((r) => r.id)).toEqual(['C-000001', 'C-000004']);
    expect(page.bad.map((b) => [b.place, b.reason])).toEqual([
      ['contacts.ndjson:2', expect.stringMatching(/^line is \d+ bytes, longer than the limit of 1000$/)],
      ['contacts.ndjson:3', 'invalid UTF-8'],
    ]);
  });
});

describe('file adapter: line handling', () => {
  it('handles a BOM, CRLF, blank lines and a last line without newline, with exact line numbers across pages', async () => {
    const text = '\uFEFF' + JSON.stringify(contact(1)) + '\r\n\r\n   \r\n' + JSON.stringify(contact(2)) + '\r\n' + 'bad\r\n' + '\n' + JSON.stringify(contact(3));
    await writeFile(join(dir.path, 'contacts.ndjson'), text, 'utf8');
    for (const highWaterMark of [3, 16, 65_536]) {
      const pages = await readAll(new FileAdapter({ folder: dir.path, highWaterMark }), 'contacts', { pageSize: 1 });
      expect(pages.flatMap((p) => p.records.map((r) => r.id))).toEqual(['C-000001', 'C-000002', 'C-000003']);
      expect(pages.flatMap((p) => p.bad.map((b) => b.place))).toEqual(['contacts.ndjson:5']);
      expect(pages.at(-1)!.nextPageToken).toBeUndefined();
    }
  });

  it('decodes Arabic text cut by a chunk boundary whole', async () => {
    const arabic = 'شركة الرياض للتجارة والمقاولات المحدودة';
    const records = Array.from({ length: 40 }, (_, i) => contact(i, { nameAr: arabic, name: `عميل ${i}`, cityAr: 'جدة' }));
    await writeNdjson(join(dir.path, 'contacts.ndjson'), records);
    // 7-byte chunks split two-byte Arabic letters many times over.
    const pages = await readAll(new FileAdapter({ folder: dir.path, highWaterMark: 7 }), 'contacts', { pageSize: 3 });
    const got = pages.flatMap((p) => p.records);
    expect(pages.flatMap((p) => p.bad)).toEqual([]);
    expect(got).toHaveLength(40);
    expect(got.every((r) => r.nameAr === arabic && r.cityAr === 'جدة')).toBe(true);
    expect(got.map((r) => r.name)).toEqual(records.map((r) => r['name']));
  });

  it('refuses a token it did not issue, and a token into a file that changed', async () => {
    await writeNdjson(join(dir.path, 'contacts.ndjson'), Array.from({ length: 10 }, (_, i) => contact(i)));
    const adapter = new FileAdapter({ folder: dir.path });
    await expect(adapter.readPage('contacts', { pageToken: 'garbage' })).rejects.toBeInstanceOf(PlatformError);
    const first = await adapter.readPage('contacts', { pageSize: 3 });
    await writeNdjson(join(dir.path, 'contacts.ndjson'), Array.from({ length: 10 }, (_, i) => contact(i, { name: `Renamed customer ${i}` })));
    await expect(adapter.readPage('contacts', { pageToken: first.nextPageToken! })).rejects.toThrow(/changed since the page token/);
  });
});

describe('writeNdjson', () => {
  it('writes an async iterable line by line and appends when asked', async () => {
    const path = join(dir.path, 'payments.ndjson');
    async function* gen(): AsyncGenerator<object> {
      for (let i = 0; i < 1000; i++) yield payment(i);
    }
    expect(await writeNdjson(path, gen(), { batchLines: 7 })).toBe(1000);
    expect(await writeNdjson(path, [payment(1000)], { append: true })).toBe(1);
    const pages = await readAll(new FileAdapter({ folder: dir.path }), 'payments');
    expect(pages.flatMap((p) => p.records.map((r) => r.id))).toEqual(Array.from({ length: 1001 }, (_, i) => `P-${i}`));
  });
});

describe('file adapter: FILE_PLATFORM_ROOT (issue 36, finding 8c)', () => {
  it('reads a file under the root, and refuses one that a symbolic link takes outside it, when the page is read', async () => {
    const root = join(dir.path, 'root');
    const outside = join(dir.path, 'outside');
    await mkdir(join(root, 'acme'), { recursive: true });
    await mkdir(outside);
    await writeFile(join(root, 'acme', 'contacts.ndjson'), lines(contact(1)));
    await writeFile(join(outside, 'invoices.ndjson'), lines({ id: 'secret-line', note: 'not for the service' }));
    // Placed after the tenants file was checked: the folder is under the root, a file in it points elsewhere.
    await symlink(join(outside, 'invoices.ndjson'), join(root, 'acme', 'invoices.ndjson'));
    const adapter = new FileAdapter({ folder: join(root, 'acme'), root });
    expect((await adapter.readPage('contacts', {})).records.map((r) => r.id)).toEqual([String(contact(1)['id'])]);
    const refused = adapter.readPage('invoices', {});
    await expect(refused).rejects.toBeInstanceOf(PlatformError);
    await expect(refused).rejects.toThrow(/invoices\.ndjson is outside FILE_PLATFORM_ROOT/);
    await expect(refused).rejects.not.toThrow(/outside\/|secret-line/);
    // A folder swapped for a link out of the root after the load.
    await symlink(outside, join(root, 'swapped'));
    await expect(new FileAdapter({ folder: join(root, 'swapped'), root }).readPage('invoices', {})).rejects.toThrow(/outside FILE_PLATFORM_ROOT/);
    // Without a root, as before: the link is followed.
    expect((await new FileAdapter({ folder: join(root, 'acme') }).readPage('invoices', {})).bad).toHaveLength(1);
  });
});
