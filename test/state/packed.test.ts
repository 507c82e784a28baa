/**
 * Packed records (src/state/packed.ts) on a real Redis: buckets split one at a time as a map grows (linear
 * hashing), every record stays readable through the splits, memory per record stays flat, and an entry of the
 * old hashes moves into its packed value when packed (migrate-keys), never staying in two places, and is never
 * read by the worker's scripts.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { packOldEntries } from '../../src/state/old-hashes.js';
import { packedCounts, scanRecords } from '../../src/state/packed.js';
import { LOAD } from '../../src/state/packed-codec.js';
import { PaymentLedger } from '../../src/state/payment-ledger.js';
import { numberTextLength, RecordMirror, type MirroredInvoice } from '../../src/state/record-mirror.js';
import { RecordStateStore } from '../../src/state/record-state.js';
import { keyBase } from '../../src/redis/keys.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

const uuidOf = (i: number): string => `${i.toString(16).padStart(8, '0')}-0000-4000-8000-${(i * 7).toString(16).padStart(12, '0')}`;
const hashOf = (i: number): string => (i * 2654435761).toString(16).padStart(18, '0').slice(-18);

describe('packed records', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('splits buckets one at a time as records arrive, and every record stays readable', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const key = s.key('acme', 'invoices');
    const all: { id: string; uuid: string; hash: string }[] = [];
    let buckets = 1;
    for (let page = 0; page < 30; page += 1) {
      const entries = Array.from({ length: 100 }, (_, j) => {
        const i = page * 100 + j;
        return { id: `INV-${i}`, uuid: uuidOf(i), hash: hashOf(i) };
      });
      await s.setMany('acme', 'invoices', entries);
      all.push(...entries);
      const fields = (await redis.hlen(key)) - 1;
      // The meta field: `n0 split records ...`; the map has n0 + split buckets (an empty one is not stored).
      const [n0, split] = String(await redis.hget(key, 'm')).split(' ').map(Number);
      const mapBuckets = (n0 ?? 0) + (split ?? 0);
      // Growth is incremental: a page adds a few buckets, never a rehash of all of them.
      expect(mapBuckets - buckets).toBeLessThanOrEqual(Math.ceil(100 / LOAD) + 1);
      buckets = mapBuckets;
      expect(mapBuckets).toBeGreaterThanOrEqual(Math.floor(all.length / LOAD));
      expect(fields).toBeLessThanOrEqual(mapBuckets);
      expect(fields).toBeGreaterThan(mapBuckets * 0.9);
    }
    expect(await s.count('acme', 'invoices')).toBe(3000);
    expect(await packedCounts(redis, prefix, 'acme', 'invoices')).toEqual({ records: 3000, segments: [3000, 0, 0] });
    const got = await s.getMany('acme', 'invoices', all.map((e) => e.id));
    for (const e of all) expect(got.get(e.id)).toEqual({ uuid: e.uuid, hash: e.hash });
    // Binary-safe: a uuid and hash as raw bytes (16 and 9) whatever bytes they hold.
    expect(await redis.call('OBJECT', 'ENCODING', key)).toBe('hashtable');
    const seen = new Set<string>();
    for await (const batch of scanRecords(redis, prefix, 'acme', 'invoices', 1, 200)) for (const [id] of batch) seen.add(id);
    expect(seen.size).toBe(3000);
  });

  it('a map packed fuller than the load (written by a version with a larger one) splits as it is written, every record readable', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const key = s.key('acme', 'invoices');
    const entry = (i: number) => ({ id: `OLD-${i}`, uuid: uuidOf(i), hash: hashOf(i) });
    await s.setMany('acme', 'invoices', Array.from({ length: 2000 }, (_, i) => entry(i)));
    // Fold every bucket into bucket 0 of a one-bucket map: what a load of 2,000 a bucket would have written (a
    // bucket's value is its records, each length-prefixed, so the values concatenate).
    const flat = await redis.hgetallBuffer(key);
    const meta = String(flat['m']).split(' ');
    const folded = Buffer.concat(Object.entries(flat).filter(([f]) => f !== 'm').map(([, v]) => v));
    await redis.del(key);
    await redis.hset(key, 'm', ['1', '0', ...meta.slice(2)].join(' '), '0', folded);
    const read = async (): Promise<void> => {
      const got = await s.getMany('acme', 'invoices', Array.from({ length: 2000 }, (_, i) => `OLD-${i}`));
      expect(got.size).toBe(2000);
      for (let i = 0; i < 2000; i += 97) expect(got.get(`OLD-${i}`)).toEqual({ uuid: uuidOf(i), hash: hashOf(i) });
    };
    await read();
    // Each write splits at most 64 buckets (a bounded script), so the map reaches the load over a few writes.
    let writes = 0;
    for (;;) {
      await s.setMany('acme', 'invoices', [{ id: `NEW-${writes}`, uuid: uuidOf(5000 + writes), hash: hashOf(5000 + writes) }]);
      writes += 1;
      const [n0, split] = String(await redis.hget(key, 'm')).split(' ').map(Number);
      if ((n0 ?? 0) + (split ?? 0) >= Math.floor((2000 + writes) / LOAD)) break;
      expect(writes).toBeLessThan(20);
    }
    expect(writes).toBeGreaterThan(1);
    await read();
    expect(await s.count('acme', 'invoices')).toBe(2000 + writes);
  });

  it('a walk sees each record exactly once while buckets split under it', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const entry = (i: number) => ({ id: `P-${i}`, uuid: uuidOf(i), hash: hashOf(i) });
    await s.setMany('acme', 'payments', Array.from({ length: 1000 }, (_, i) => entry(i)));
    const seen: string[] = [];
    let next = 1000;
    for await (const batch of s.scan('acme', 'payments', 50)) {
      seen.push(...batch.map((e) => e.id));
      // Between two batches, a page of new records: the map grows (and splits buckets) under the walk.
      await s.setMany('acme', 'payments', Array.from({ length: 200 }, (_, i) => entry(next + i)));
      next += 200;
    }
    expect(new Set(seen).size).toBe(seen.length);
    for (let i = 0; i < 1000; i += 1) expect(seen).toContain(`P-${i}`);
    expect(next).toBeGreaterThan(3000);
  });

  it('bytes per record stay flat as a map grows tenfold', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const key = s.key('acme', 'contacts');
    const perRecord: number[] = [];
    let n = 0;
    for (const target of [2_000, 20_000]) {
      while (n < target) {
        const entries = Array.from({ length: 500 }, (_, j) => ({ id: `RC${String(n + j).padStart(6, '0')}`, uuid: uuidOf(n + j), hash: hashOf(n + j) }));
        await s.setMany('acme', 'contacts', entries);
        n += 500;
      }
      perRecord.push(Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) / n);
    }
    const [small, large] = perRecord as [number, number];
    // id (8) + uuid (16) + hash (9) + lengths: about 40 bytes of data a record, plus the bucket's share.
    expect(large).toBeLessThan(60);
    expect(large / small).toBeGreaterThan(0.85);
    expect(large / small).toBeLessThan(1.15);
  });

  it("the worker's scripts never read an old hash: an id only there is unknown to them, its entry left; packOldEntries moves it", async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const old = s.oldKey('acme', 'contacts');
    await redis.hset(old, 'c1', `${uuidOf(1)}|${hashOf(1)}${'7'.repeat(14)}`, 'c2', `${uuidOf(2)}|`);
    expect(await s.getMany('acme', 'contacts', ['c1', 'c2'])).toEqual(new Map());
    expect(await s.count('acme', 'contacts')).toBe(0);
    // A write of c2 starts its packed record afresh: the old entry is neither read nor deleted.
    await s.setMany('acme', 'contacts', [{ id: 'c2', uuid: uuidOf(22) }]);
    expect(await s.get('acme', 'contacts', 'c2')).toEqual({ uuid: uuidOf(22) });
    expect((await redis.hkeys(old)).sort()).toEqual(['c1', 'c2']);
    // Clearing hashes walks the packed map only: c1's old entry keeps its hash (packing brings it in).
    expect(await s.clearHashes('acme', 'contacts')).toBe(0);
    expect(await redis.hget(old, 'c1')).toBe(`${uuidOf(1)}|${hashOf(1)}${'7'.repeat(14)}`);
    // Packing: c1 moves; c2's packed value is the newer, and its old entry only goes.
    expect(await packOldEntries(redis, prefix, 'acme', true)).toBe(2);
    expect(await redis.exists(old)).toBe(0);
    expect(await s.getMany('acme', 'contacts', ['c1', 'c2'])).toEqual(
      new Map([
        ['c1', { uuid: uuidOf(1), hash: hashOf(1) }],
        ['c2', { uuid: uuidOf(22) }],
      ]),
    );
  });

  it('a packing batch that fails on a corrupt old entry has moved nothing (Redis does not roll a script back)', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    await redis.hset(s.oldKey('acme', 'contacts'), 'c1', `${uuidOf(1)}|`, 'c2', 'no-separator');
    await expect(packOldEntries(redis, prefix, 'acme', true)).rejects.toThrow(`${keyBase(prefix)}:ids:{acme}:contacts field "c2"`);
    expect(await redis.hget(s.oldKey('acme', 'contacts'), 'c1')).toBe(`${uuidOf(1)}|`);
    expect(await s.get('acme', 'contacts', 'c1')).toBeUndefined();
    expect(await redis.exists(s.key('acme', 'contacts'))).toBe(0);
  });

  it('packOldEntries moves every old entry into packed records: a dry run counts, a rerun finds nothing', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    const ledger = new PaymentLedger(redis, prefix);
    const [pay, inv] = ledger.keysOf('acme') as [string, string];
    for (let i = 0; i < 1200; i += 1) await redis.hset(s.oldKey('acme', 'invoices'), `i${i}`, `${uuidOf(i)}|${hashOf(i)}`);
    await redis.hset(pay, 'p1', '0|5|i1');
    await redis.hset(inv, 'i1', '["p1"]');
    // One left behind by a write since (the packed value is the newer): it only goes.
    await s.setMany('acme', 'contacts', [{ id: 'c1', uuid: uuidOf(9) }]);
    await redis.hset(s.oldKey('acme', 'contacts'), 'c1', `${uuidOf(8)}|`);
    expect(await packOldEntries(redis, prefix, 'acme', false)).toBe(1203);
    expect(await redis.hlen(s.oldKey('acme', 'invoices'))).toBe(1200);
    // i1's ledger entry moves with its id-map entry (one record, one value): 1,202 ids seen.
    expect(await packOldEntries(redis, prefix, 'acme', true, 100)).toBe(1202);
    for (const k of [s.oldKey('acme', 'invoices'), s.oldKey('acme', 'contacts'), pay, inv]) expect(await redis.exists(k)).toBe(0);
    expect(await s.count('acme', 'invoices')).toBe(1200);
    expect(await s.get('acme', 'invoices', 'i1')).toEqual({ uuid: uuidOf(1), hash: hashOf(1) });
    expect(await s.get('acme', 'contacts', 'c1')).toEqual({ uuid: uuidOf(9) });
    expect(await ledger.totals('acme', ['i1'])).toEqual(new Map([['i1', 5]]));
    expect(await packOldEntries(redis, prefix, 'acme', true)).toBe(0);
  });

  it('keeps the id map, mirror and ledger of a record in one value, each store to its own segment', async () => {
    const prefix = testPrefix();
    const ids = new RecordStateStore(redis, prefix);
    const mirror = new RecordMirror(redis, prefix);
    const ledger = new PaymentLedger(redis, prefix);
    const invoice: MirroredInvoice = {
      id: 'INV-1',
      contactId: 'C-1',
      status: 'AUTHORISED',
      deleted: false,
      number: 'INV-0001',
      date: '2026-01-31',
      dueDate: '2026-03-02',
      total: 35097.68,
      outstandingAmount: 0.5,
      pushedOutstanding: -1234.5678,
      updatedAt: '2026-11-01T02:55:00.103Z',
      currencyCode: 'SAR',
      reference: 'مرجع ١٢٣ / ref',
      notes: 'emoji 🙂 and ünïcode',
      uuid: uuidOf(1),
    };
    await ids.setMany('acme', 'invoices', [{ id: 'INV-1', uuid: uuidOf(1), hash: hashOf(1) }]);
    await mirror.putMany('acme', 'invoices', [invoice]);
    await ledger.setMany('acme', [{ invoiceId: 'INV-1', paymentId: 'P-1', amount: 10.25, deleted: false }]);
    expect((await mirror.getMany('acme', 'invoices', ['INV-1'])).get('INV-1')).toEqual(invoice);
    expect(await ids.get('acme', 'invoices', 'INV-1')).toEqual({ uuid: uuidOf(1), hash: hashOf(1) });
    expect(await ledger.totals('acme', ['INV-1'])).toEqual(new Map([['INV-1', 10.25]]));
    expect(await packedCounts(redis, prefix, 'acme', 'invoices')).toEqual({ records: 1, segments: [1, 1, 1] });
    // One read for both segments: what the two stores read each.
    const both = await mirror.getManyWithState('acme', 'invoices', ['INV-1', 'INV-none']);
    expect(both.items).toEqual(await mirror.getMany('acme', 'invoices', ['INV-1', 'INV-none']));
    expect(both.states).toEqual(await ids.getMany('acme', 'invoices', ['INV-1', 'INV-none']));
    expect(both.states.get('INV-1')).toEqual({ uuid: uuidOf(1), hash: hashOf(1) });
    // The mirror shares the id map's uuid (stored once); a new uuid in the id map leaves the mirror's as it was.
    const bucket = (await redis.hgetBuffer(ids.key('acme', 'invoices'), '0')) ?? Buffer.alloc(0);
    const raw = Buffer.from(uuidOf(1).replace(/-/g, ''), 'hex');
    expect(bucket.indexOf(raw)).toBeGreaterThan(0);
    expect(bucket.indexOf(raw)).toBe(bucket.lastIndexOf(raw));
    await ids.setMany('acme', 'invoices', [{ id: 'INV-1', uuid: uuidOf(2) }]);
    expect((await mirror.getMany('acme', 'invoices', ['INV-1'])).get('INV-1')?.uuid).toBe(uuidOf(1));
    expect(await ids.get('acme', 'invoices', 'INV-1')).toEqual({ uuid: uuidOf(2), hash: hashOf(1) });
    await ids.clearHashes('acme', 'invoices');
    expect((await mirror.getMany('acme', 'invoices', ['INV-1'])).get('INV-1')).toEqual(invoice);
    const contact = { id: 'C-1', name: 'Al Noor Trading', nameAr: 'النور للتجارة 4407', firstName: 'ٱلْحَمْدُ', deleted: true, uuid: 'not-a-canonical-uuid', phoneNumber: '+966501234567' };
    await mirror.putMany('acme', 'contacts', [contact]);
    expect((await mirror.getMany('acme', 'contacts', ['C-1'])).get('C-1')).toEqual(contact);
  });

  it("writes a record's id map and mirror cells in one script: the same bytes as the two writes one after the other", async () => {
    const prefix = testPrefix();
    const ids = new RecordStateStore(redis, prefix);
    const mirror = new RecordMirror(redis, prefix);
    const invoice = (i: number): MirroredInvoice => ({
      id: `INV-${i}`,
      contactId: `C-${i % 7}`,
      status: 'AUTHORISED',
      deleted: false,
      number: `N-${i}`,
      date: '2026-01-31',
      dueDate: '2026-03-02',
      total: 100 + i,
      outstandingAmount: 50,
      updatedAt: '2026-11-01T02:55:00.103Z',
      reference: i % 2 === 0 ? 'مرجع' : 'ref',
      uuid: uuidOf(i),
      ...(i % 3 === 0 ? { pushedOutstanding: 25 } : {}),
    });
    const items = Array.from({ length: 40 }, (_, i) => invoice(i));
    // One: id map, then mirror (two scripts). Two: both in one. The second tenant's bucket bytes must be equal.
    await ids.setMany('one', 'invoices', items.map((it) => ({ id: it.id, uuid: uuidOf(it.id.length + Number(it.id.slice(4))), hash: hashOf(1) })));
    await ids.setMany('one', 'invoices', items.map((it) => ({ id: it.id, uuid: it.uuid ?? '', hash: hashOf(2) })));
    await mirror.putMany('one', 'invoices', items);
    await ids.setMany('two', 'invoices', items.map((it) => ({ id: it.id, uuid: uuidOf(it.id.length + Number(it.id.slice(4))), hash: hashOf(1) })));
    await ids.setMany('two', 'invoices', items.map((it) => ({ id: it.id, uuid: it.uuid ?? '', hash: hashOf(2), mirror: mirror.segment('invoices', it) })));
    const one = await redis.hgetallBuffer(ids.key('one', 'invoices'));
    const two = await redis.hgetallBuffer(ids.key('two', 'invoices'));
    expect(Object.keys(two).sort()).toEqual(Object.keys(one).sort());
    for (const [field, bytes] of Object.entries(one)) expect(two[field]?.equals(bytes)).toBe(true);
    const got = await mirror.getMany('two', 'invoices', items.map((it) => it.id));
    for (const it of items) expect(got.get(it.id)).toEqual(it);
    expect(await packedCounts(redis, prefix, 'two', 'invoices')).toEqual({ records: 40, segments: [40, 40, 0] });
    // The uuid is stored once (the mirror's cell says "the id map's").
    const all = Buffer.concat(Object.values(two));
    const raw = Buffer.from(uuidOf(3).replace(/-/g, ''), 'hex');
    expect(all.indexOf(raw)).toBe(all.lastIndexOf(raw));
    await expect(ids.setMany('two', 'payments', [{ id: 'P-1', hash: hashOf(1), mirror: Buffer.from('C') }])).rejects.toThrow(/no mirror segment for payments P-1/);
  });

  it("counts a number's text without making it: the length String gives, for integers and hundredths below 1e12", () => {
    const samples: number[] = [0, 1, -1, 9, 10, 99, 100, 0.5, -0.5, 0.05, -0.05, 0.1, 0.01, 12.3, 12.34, 1234.5, 999999999999.99, -999999999999.99, 123456789012];
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 20_000; i += 1) {
      const scale = 10 ** Math.floor(rand() * 12);
      samples.push(Math.round((rand() - 0.5) * scale * 200) / 100);
    }
    let counted = 0;
    for (const n of samples) {
      const m = Number.isInteger(n) ? n : Math.round(n * 100);
      const len = numberTextLength(n, m);
      if (len === undefined) continue;
      counted += 1;
      expect(len, String(n)).toBe(String(n).length);
    }
    expect(counted).toBeGreaterThan(19_000);
    expect(numberTextLength(1e12, 1e12)).toBeUndefined();
    expect(numberTextLength(-0, 0)).toBeUndefined();
  });

  it('keeps a GUID id (Xero) in 17 bytes, not 36, and packs it from old hashes by its text', async () => {
    const prefix = testPrefix();
    const ids = new RecordStateStore(redis, prefix);
    const mirror = new RecordMirror(redis, prefix);
    const guid = (i: number): string => uuidOf(i + 1000);
    await ids.setMany('acme', 'invoices', Array.from({ length: 100 }, (_, i) => ({ id: guid(i), uuid: uuidOf(i), hash: hashOf(i) })));
    await mirror.putMany('acme', 'invoices', [
      { id: guid(0), contactId: guid(500), status: 'PAID', deleted: false, number: 'N', date: '2026-01-01', dueDate: '2026-01-02', total: 1, updatedAt: '2026-01-01T00:00:00.000Z', uuid: uuidOf(0) },
    ]);
    const bytes = (await redis.hvalsBuffer(ids.key('acme', 'invoices'))).reduce((n, v) => n + v.length, 0);
    // id 17 + uuid 16 + hash 9 + lengths, a record: well under the 36 characters of the id alone plus the rest.
    expect(bytes / 100).toBeLessThan(55);
    expect((await ids.get('acme', 'invoices', guid(7)))?.uuid).toBe(uuidOf(7));
    expect((await mirror.getMany('acme', 'invoices', [guid(0)])).get(guid(0))?.contactId).toBe(guid(500));
    const scanned: string[] = [];
    for await (const batch of ids.scan('acme', 'invoices')) scanned.push(...batch.map((e) => e.id));
    expect(scanned.sort()).toEqual(Array.from({ length: 100 }, (_, i) => guid(i)).sort());
    // Upper case is not canonical: kept as given, and a different id.
    await ids.setMany('acme', 'invoices', [{ id: guid(1).toUpperCase(), uuid: uuidOf(99) }]);
    expect((await ids.get('acme', 'invoices', guid(1)))?.uuid).toBe(uuidOf(1));
    expect((await ids.get('acme', 'invoices', guid(1).toUpperCase()))?.uuid).toBe(uuidOf(99));
    // An old id-map entry under a GUID id is found by its text when packed, and kept in 17 bytes.
    await redis.hset(ids.oldKey('acme', 'contacts'), guid(200), `${uuidOf(200)}|`);
    expect(await packOldEntries(redis, prefix, 'acme', true)).toBe(1);
    expect(await redis.hlen(ids.oldKey('acme', 'contacts'))).toBe(0);
    expect(await ids.get('acme', 'contacts', guid(200))).toEqual({ uuid: uuidOf(200) });
    await ids.setMany('acme', 'contacts', [{ id: guid(200), hash: hashOf(200) }]);
    expect(await ids.get('acme', 'contacts', guid(200))).toEqual({ uuid: uuidOf(200), hash: hashOf(200) });
    expect(await ids.clearHashes('acme', 'contacts')).toBe(1);
    // The ledger keeps GUID ids in 17 bytes too, and gives them back as text.
    const ledger = new PaymentLedger(redis, prefix);
    await ledger.setMany('acme', [{ invoiceId: guid(0), paymentId: guid(900), amount: 12.5, deleted: false }]);
    await ledger.setMany('acme', [{ invoiceId: guid(0), paymentId: guid(901), amount: 0.5, deleted: false }]);
    expect(await ledger.totals('acme', [guid(0)])).toEqual(new Map([[guid(0), 13]]));
    expect(await ledger.invoicesOf('acme', [guid(900)])).toEqual(new Map([[guid(900), { invoiceId: guid(0), amount: 12.5, deleted: false }]]));
    await ledger.setMany('acme', [{ invoiceId: guid(1), paymentId: guid(900), amount: 12.5, deleted: false }]);
    expect(await ledger.totals('acme', [guid(0), guid(1)])).toEqual(new Map([[guid(0), 0.5], [guid(1), 12.5]]));
    const payments = (await redis.hvalsBuffer(ids.key('acme', 'payments'))).reduce((n, v) => n + v.length, 0);
    expect(payments).toBeLessThan(2 * (36 + 17));
  });
  it('edits a bucket in place: changed records re-encoded where they were, removed ones gone, new ones last, the rest byte for byte', async () => {
    const prefix = testPrefix();
    const ids = new RecordStateStore(redis, prefix);
    const ledger = new PaymentLedger(redis, prefix);
    const key = ids.key('acme', 'invoices');
    // Fewer than LOAD records: one bucket. A 200-character id and a 300-character uuid text: lengths of two bytes.
    const long = `L${'x'.repeat(199)}`;
    const first = [
      { id: 'A', uuid: uuidOf(1), hash: hashOf(1) },
      { id: long, uuid: `T${'u'.repeat(299)}`, hash: hashOf(2) },
      { id: uuidOf(77), uuid: uuidOf(3), hash: hashOf(3) },
      { id: 'B', uuid: uuidOf(4) },
    ];
    await ids.setMany('acme', 'invoices', first);
    await ledger.setMany('acme', [{ invoiceId: 'C', paymentId: 'P-1', amount: 5, deleted: false }]);
    const before = entriesOf((await redis.hgetBuffer(key, '0')) ?? Buffer.alloc(0));
    expect(before.map((e) => e.key.length)).toEqual([1, 200, 17, 1, 1]);
    // One script: the long one changes (its hash), A and B are left; then one ledger script empties C's value (the
    // payment moves to D: C is removed) and fills it again (a second payment for C), D is new.
    await ids.setMany('acme', 'invoices', [{ id: long, hash: hashOf(9) }, { id: 'E', uuid: uuidOf(5) }]);
    await ledger.setMany('acme', [
      { invoiceId: 'D', paymentId: 'P-1', amount: 5, deleted: false },
      { invoiceId: 'C', paymentId: 'P-2', amount: 7, deleted: false },
    ]);
    const after = entriesOf((await redis.hgetBuffer(key, '0')) ?? Buffer.alloc(0));
    expect(after.map((e) => e.key.toString('latin1'))).toEqual(before.map((e) => e.key.toString('latin1')).concat(['E', 'D']));
    for (const i of [0, 2, 3]) expect(after[i]?.raw.equals(before[i]?.raw ?? Buffer.alloc(0))).toBe(true);
    expect(after[1]?.raw.equals(before[1]?.raw ?? Buffer.alloc(0))).toBe(false);
    expect(await ids.get('acme', 'invoices', long)).toEqual({ uuid: `T${'u'.repeat(299)}`, hash: hashOf(9) });
    expect(await ids.get('acme', 'invoices', 'E')).toEqual({ uuid: uuidOf(5) });
    expect(await ids.get('acme', 'invoices', uuidOf(77))).toEqual({ uuid: uuidOf(3), hash: hashOf(3) });
    expect(await ledger.totals('acme', ['C', 'D'])).toEqual(new Map([['C', 7], ['D', 5]]));
    expect(await packedCounts(redis, prefix, 'acme', 'invoices')).toEqual({ records: 7, segments: [5, 0, 2] });
  });
});

/** A bucket's entries as stored (`varint(len) key varint(len) value`, repeated), each with its bytes. */
function entriesOf(blob: Buffer): { key: Buffer; value: Buffer; raw: Buffer }[] {
  const out: { key: Buffer; value: Buffer; raw: Buffer }[] = [];
  const varint = (at: number): [number, number] => {
    let n = 0;
    for (let m = 1, i = at; i < blob.length; i += 1, m *= 128) {
      const b = blob[i] as number;
      if (b < 128) return [n + b * m, i + 1];
      n += (b - 128) * m;
    }
    throw new Error('bad varint');
  };
  for (let i = 0; i < blob.length; ) {
    const start = i;
    const [kl, k] = varint(i);
    const [vl, v] = varint(k + kl);
    i = v + vl;
    out.push({ key: blob.subarray(k, k + kl), value: blob.subarray(v, v + vl), raw: blob.subarray(start, i) });
  }
  return out;
}
