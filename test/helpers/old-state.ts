/**
 * A tenant's packed records (src/state/packed.ts) written back as the hashes versions before them kept (`ids`,
 * `cache`, `ledger`), values in the compact forms those versions wrote, and the packed maps deleted: the state an
 * upgrade starts from.
 */
import type { Redis } from 'ioredis';
import { ENTITIES } from '../../src/glossary.js';
import { encodeHash, encodeUuid } from '../../src/state/compact.js';
import { stateKey } from '../../src/state/keys.js';
import { PaymentLedger } from '../../src/state/payment-ledger.js';
import { packedKey, scanRecords } from '../../src/state/packed.js';
import { idOf, readVarint } from '../../src/state/packed-codec.js';
import { RecordMirror } from '../../src/state/record-mirror.js';
import { RecordStateStore } from '../../src/state/record-state.js';

export async function unpackToOldHashes(redis: Redis, prefix: string, tenant: string): Promise<number> {
  const records = new RecordStateStore(redis, prefix);
  const mirror = new RecordMirror(redis, prefix);
  let n = 0;
  for (const entity of ENTITIES) {
    for await (const batch of records.scan(tenant, entity)) {
      for (const e of batch) {
        await redis.hset(records.oldKey(tenant, entity), e.id, `${e.uuid === undefined ? '' : encodeUuid(e.uuid)}|${e.hash === undefined ? '' : encodeHash(e.hash)}`);
        n += 1;
      }
    }
  }
  for (const entity of ['contacts', 'invoices'] as const) {
    for await (const batch of mirror.scan(tenant, entity)) {
      for (const item of batch) await redis.hset(stateKey(prefix, 'mirror', tenant, entity), item.id, JSON.stringify(item));
    }
  }
  for await (const batch of scanRecords(redis, prefix, tenant, 'payments', 3)) {
    const known = await new PaymentLedger(redis, prefix).invoicesOf(tenant, batch.map(([id]) => id));
    for (const [id, e] of known) await redis.hset(stateKey(prefix, 'paymentLedger', tenant, 'pay'), id, `${e.deleted ? 1 : 0}|${e.amount}|${e.invoiceId}`);
  }
  for await (const batch of scanRecords(redis, prefix, tenant, 'invoices', 3)) {
    for (const [id, segs] of batch) {
      const seg = segs[2] as Buffer;
      const list: string[] = [];
      for (let i = 0; i < seg.length; ) {
        const [len, at] = readVarint(seg, i) ?? [0, seg.length];
        list.push(idOf(seg.subarray(at, at + len)));
        i = at + len;
      }
      await redis.hset(stateKey(prefix, 'paymentLedger', tenant, 'inv'), id, JSON.stringify(list));
    }
  }
  for (const entity of ENTITIES) await redis.del(packedKey(prefix, tenant, entity));
  return n;
}
