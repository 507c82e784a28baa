import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { packOldEntries } from '../../src/state/old-hashes.js';
import { PaymentLedger } from '../../src/state/payment-ledger.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

describe('PaymentLedger', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('totals non-deleted payments per invoice; unknown invoices are absent, all-deleted ones total 0', async () => {
    const s = new PaymentLedger(redis, testPrefix());
    await s.setMany('acme', [
      { invoiceId: 'i1', paymentId: 'p1', amount: 100, deleted: false },
      { invoiceId: 'i1', paymentId: 'p2', amount: 50.5, deleted: false },
      { invoiceId: 'i1', paymentId: 'p3', amount: 999, deleted: true },
      { invoiceId: 'i2', paymentId: 'p4', amount: 10, deleted: true },
    ]);
    const totals = await s.totals('acme', ['i1', 'i2', 'i3']);
    expect(totals.get('i1')).toBe(150.5);
    expect(totals.get('i2')).toBe(0);
    expect(totals.has('i3')).toBe(false);
    // a payment deleted later, then restored
    await s.setMany('acme', [{ invoiceId: 'i1', paymentId: 'p1', amount: 100, deleted: true }]);
    expect((await s.totals('acme', ['i1'])).get('i1')).toBe(50.5);
    await s.setMany('acme', [{ invoiceId: 'i1', paymentId: 'p1', amount: 80, deleted: false }]);
    expect((await s.totals('acme', ['i1'])).get('i1')).toBe(130.5);
  });

  it('sums decimals without float noise', async () => {
    const s = new PaymentLedger(redis, testPrefix());
    await s.setMany('acme', [
      { invoiceId: 'i1', paymentId: 'a', amount: 0.1, deleted: false },
      { invoiceId: 'i1', paymentId: 'b', amount: 0.2, deleted: false },
      { invoiceId: 'i1', paymentId: 'c', amount: 1234567.891, deleted: false },
    ]);
    expect((await s.totals('acme', ['i1'])).get('i1')).toBe(1234568.191);
  });

  it('a payment moved to another invoice leaves the old one', async () => {
    const s = new PaymentLedger(redis, testPrefix());
    await s.setMany('acme', [
      { invoiceId: 'i1', paymentId: 'p1', amount: 30, deleted: false },
      { invoiceId: 'i1', paymentId: 'p2', amount: 20, deleted: false },
      { invoiceId: 'i2', paymentId: 'p3', amount: 5, deleted: false },
    ]);
    await s.setMany('acme', [{ invoiceId: 'i2', paymentId: 'p1', amount: 30, deleted: false }]);
    let totals = await s.totals('acme', ['i1', 'i2']);
    expect(totals.get('i1')).toBe(20);
    expect(totals.get('i2')).toBe(35);
    await s.setMany('acme', [{ invoiceId: 'i2', paymentId: 'p2', amount: 20, deleted: false }]);
    totals = await s.totals('acme', ['i1', 'i2']);
    expect(totals.has('i1')).toBe(false);
    expect(totals.get('i2')).toBe(55);
    const of = await s.invoicesOf('acme', ['p1', 'p2', 'p9']);
    expect(of.get('p1')).toEqual({ invoiceId: 'i2', amount: 30, deleted: false });
    expect(of.has('p9')).toBe(false);
  });

  it('keeps ids with odd characters intact', async () => {
    const s = new PaymentLedger(redis, testPrefix());
    const inv = 'INV|7 "quoted" / ü';
    await s.setMany('acme', [{ invoiceId: inv, paymentId: 'pay|1 "x"', amount: 12, deleted: false }]);
    expect((await s.totals('acme', [inv])).get(inv)).toBe(12);
    expect((await s.invoicesOf('acme', ['pay|1 "x"'])).get('pay|1 "x"')?.invoiceId).toBe(inv);
  });

  it('a corrupted value gives an error naming the key and field', async () => {
    const prefix = testPrefix();
    const s = new PaymentLedger(redis, prefix);
    await s.setMany('acme', [{ invoiceId: 'i1', paymentId: 'p1', amount: 1, deleted: false }]);
    // The old ledgers (read by migrate-keys' packing alone) name their own key.
    await redis.hset(`${keyBase(prefix)}:ledger:{acme}:pay`, 'p9', 'junk');
    await expect(packOldEntries(redis, prefix, 'acme', true)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(packOldEntries(redis, prefix, 'acme', true)).rejects.toThrow(`${keyBase(prefix)}:ledger:{acme}:pay field "p9"`);
    expect(await s.totals('acme', ['i1'])).toEqual(new Map([['i1', 1]]));
    await redis.del(`${keyBase(prefix)}:ledger:{acme}:pay`);
    await redis.hset(`${keyBase(prefix)}:ledger:{acme}:inv`, 'i2', '[oops');
    await expect(packOldEntries(redis, prefix, 'acme', true)).rejects.toThrow(`${keyBase(prefix)}:ledger:{acme}:inv field "i2"`);
  });
});
