/**
 * The bytes of packed state do not depend on how the Lua is cut into includes: one fixed sequence of writes
 * (entries of the old hashes packed by migrate-keys' packing, then the worker's writes: id maps, mirror cells,
 * ledger entries, a uuid change, a payment moving invoices, hashes cleared) and the reads of the same scripts,
 * compared byte for byte with test/fixtures/packed-bytes.json. The fixture was written by the scripts as they were
 * before packed.lua was split (docs/decisions/0180-packed-includes.md): a stored value that changes here would
 * be read differently by a worker of either version. `PACKED_BYTES_WRITE=1` writes it again, for a deliberate
 * format change only.
 *
 * The old hashes are kept in listpack encoding (few fields; the longest value, a 69-byte old id-map entry, under
 * the limit set below): HSCAN then gives insertion order, so the ids reach the packing script in the same order
 * on every server (a hashtable's order follows a per-process seed), and the order records enter a bucket is
 * part of its bytes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ENTITIES } from '../../src/glossary.js';
import { encodeHash, encodeUuid } from '../../src/state/compact.js';
import { keyBase } from '../../src/redis/keys.js';
import { stateKey } from '../../src/state/keys.js';
import { packOldEntries } from '../../src/state/old-hashes.js';
import { getRecords, scanRecords } from '../../src/state/packed.js';
import { PaymentLedger } from '../../src/state/payment-ledger.js';
import { RecordMirror } from '../../src/state/record-mirror.js';
import { RecordStateStore } from '../../src/state/record-state.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

const FIXTURE = new URL('../fixtures/packed-bytes.json', import.meta.url);
const TENANT = 'acme';

const uuidOf = (i: number): string => `${i.toString(16).padStart(8, '0')}-0000-4000-8000-${(i * 7).toString(16).padStart(12, '0')}`;
const hashOf = (i: number): string => (i * 2654435761).toString(16).padStart(18, '0').slice(-18);
/** A Xero-style id (a canonical GUID: 17 bytes in a bucket) for even i, a plain one for odd i. */
const idOf = (kind: string, i: number): string => (i % 2 === 0 ? uuidOf(100_000 + i) : `${kind}-${i}`);

type Dump = Record<string, string>;

/** Every field of the tenant's state hashes (packed maps and what is left of the old ones), hex, by `key field`. */
async function dumpState(redis: Redis, prefix: string): Promise<Dump> {
  const out: Dump = {};
  const keys = [...ENTITIES.map((e) => stateKey(prefix, 'rec', TENANT, e)), ...ENTITIES.map((e) => stateKey(prefix, 'ids', TENANT, e))];
  for (const key of keys) {
    const flat = await redis.hgetallBuffer(key);
    for (const [field, v] of Object.entries(flat)) out[`${key.slice(keyBase(prefix).length)} ${field}`] = v.toString('hex');
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

describe('packed bytes', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('a fixed sequence of writes stores, and its reads give, the bytes the scripts gave before the split', async () => {
    const prefix = testPrefix();
    const records = new RecordStateStore(redis, prefix);
    const mirror = new RecordMirror(redis, prefix);
    const ledger = new PaymentLedger(redis, prefix);
    const out: Record<string, unknown> = {};
    const limit = (await redis.config('GET', 'hash-max-listpack-value')) as string[];
    await redis.config('SET', 'hash-max-listpack-value', '128');
    onTestFinished(async () => {
      await redis.config('SET', 'hash-max-listpack-value', limit[1] ?? '64');
    });

    // The state a version before packed records left (small hashes, values in the forms those versions wrote).
    for (let i = 0; i < 40; i += 1) {
      const value = i % 5 === 0 ? `${encodeUuid(uuidOf(i))}|` : `${i % 3 === 0 ? uuidOf(i) : encodeUuid(uuidOf(i))}|${i % 4 === 0 ? `${hashOf(i)}${'7'.repeat(14)}` : encodeHash(hashOf(i))}`;
      await redis.hset(stateKey(prefix, 'ids', TENANT, 'contacts'), idOf('C', i), value);
    }
    for (let i = 0; i < 20; i += 1) await redis.hset(stateKey(prefix, 'mirror', TENANT, 'contacts'), idOf('C', i), JSON.stringify({ id: `C${i}`, name: `N${i}`, deleted: i === 3 }));
    for (let i = 0; i < 30; i += 1) await redis.hset(stateKey(prefix, 'ids', TENANT, 'invoices'), idOf('I', i), `${encodeUuid(uuidOf(500 + i))}|${encodeHash(hashOf(500 + i))}`);
    for (let i = 0; i < 12; i += 1) await redis.hset(stateKey(prefix, 'paymentLedger', TENANT, 'pay'), idOf('P', i), `${i === 4 ? 1 : 0}|${10 + i}.5|${idOf('I', i % 5)}`);
    for (let j = 0; j < 5; j += 1) {
      const list = Array.from({ length: 12 }, (_, i) => i).filter((i) => i % 5 === j).map((i) => idOf('P', i));
      await redis.hset(stateKey(prefix, 'paymentLedger', TENANT, 'inv'), idOf('I', j), JSON.stringify(list));
    }
    // One id written since, then found in an old hash too: the packed value is the newer.
    await records.setMany(TENANT, 'contacts', [{ id: idOf('C', 41), uuid: uuidOf(41) }]);
    await redis.hset(stateKey(prefix, 'ids', TENANT, 'contacts'), idOf('C', 41), `${encodeUuid(uuidOf(4141))}|`);
    out.packed = await packOldEntries(redis, prefix, TENANT, true, 16);
    out.afterPack = await dumpState(redis, prefix);

    // The worker's writes: enough invoices to split buckets many times, over packed records that came from old ones.
    for (let page = 0; page < 3; page += 1) {
      await records.setMany(
        TENANT,
        'invoices',
        Array.from({ length: 100 }, (_, j) => {
          const i = page * 100 + j;
          return i % 7 === 0 ? { id: idOf('I', i), uuid: `text-${i}` } : { id: idOf('I', i), uuid: uuidOf(500 + i), hash: hashOf(i) };
        }),
      );
    }
    await mirror.putMany(
      TENANT,
      'contacts',
      Array.from({ length: 30 }, (_, i) => ({ id: idOf('C', i), name: `Name ${i}`, deleted: i % 9 === 0, uuid: i % 4 === 0 ? uuidOf(9000 + i) : uuidOf(i), ...(i % 3 === 0 ? { phoneNumber: `+9665${i}` } : {}) })),
    );
    await mirror.putMany(
      TENANT,
      'invoices',
      Array.from({ length: 25 }, (_, i) => ({
        id: idOf('I', i),
        contactId: idOf('C', i % 10),
        status: i % 2 ? 'AUTHORISED' : 'PAID',
        deleted: false,
        number: `INV-${i}`,
        date: '2026-01-01',
        dueDate: '2026-02-01',
        total: 100 + i * 1.25,
        updatedAt: '2026-01-03T00:00:00.000Z',
        uuid: uuidOf(500 + i),
      })),
    );
    // A uuid change under a shared mirror uuid cell, and a write of id map and mirror in one script.
    await records.setMany(TENANT, 'invoices', [{ id: idOf('I', 1), uuid: uuidOf(7777) }, { id: idOf('I', 2), hash: hashOf(2222), mirror: mirror.segment('invoices', { id: idOf('I', 2), contactId: idOf('C', 1), status: 'PAID', deleted: true, number: 'X', date: '2026-01-01', dueDate: '2026-01-01', total: 3, updatedAt: '2026-01-04T00:00:00.000Z', uuid: uuidOf(502) }) }]);
    // Payments: new ones, one moving to another invoice (its old invoice left with none: a record removed), deletions.
    await ledger.setMany(TENANT, [
      { invoiceId: 'lonely', paymentId: 'pay-x', amount: 1, deleted: false },
      ...Array.from({ length: 20 }, (_, i) => ({ invoiceId: idOf('I', i % 7), paymentId: idOf('P', 20 + i), amount: i + 0.25, deleted: i % 6 === 0 })),
    ]);
    await ledger.setMany(TENANT, [
      { invoiceId: idOf('I', 3), paymentId: 'pay-x', amount: 1, deleted: false },
      { invoiceId: idOf('I', 4), paymentId: idOf('P', 0), amount: 10.5, deleted: true },
    ]);
    out.cleared = await records.clearHashes(TENANT, 'contacts');
    out.afterWrites = await dumpState(redis, prefix);

    // The reads: raw values by id (packed-get) and a walk (packed-scan), as the scripts reply.
    const hex = (m: Map<string, (Buffer | undefined)[]>): Record<string, (string | null)[]> => Object.fromEntries([...m].map(([id, segs]) => [id, segs.map((s) => (s ? s.toString('hex') : null))]));
    const reads: Record<string, unknown> = {};
    for (const entity of ENTITIES) {
      const kind = entity === 'contacts' ? 'C' : entity === 'invoices' ? 'I' : 'P';
      reads[`get ${entity}`] = hex(await getRecords(redis, prefix, TENANT, entity, [...Array.from({ length: 45 }, (_, i) => idOf(kind, i)), 'lonely', 'pay-x', 'none']));
      for (const seg of [1, 2, 3] as const) {
        const walk: string[] = [];
        for await (const batch of scanRecords(redis, prefix, TENANT, entity, seg, 37)) for (const [id, segs] of batch) walk.push(`${id} ${segs.map((s) => (s ? s.toString('hex') : '-')).join(' ')}`);
        reads[`scan ${entity} ${seg}`] = walk.sort();
      }
    }
    reads.totals = Object.fromEntries(await ledger.totals(TENANT, Array.from({ length: 10 }, (_, i) => idOf('I', i))));
    out.reads = reads;

    if (process.env.PACKED_BYTES_WRITE === '1') writeFileSync(FIXTURE, `${JSON.stringify(out, null, 1)}\n`);
    const golden = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Record<string, unknown>;
    expect(out).toEqual(golden);
  });
});
