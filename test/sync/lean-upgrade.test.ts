/**
 * Upgrade to the lean state values (README decision "lean state values"): a tenant whose id maps and record mirror
 * hold the values versions before it wrote (36-character uuids, 32-hex content hashes, whole records as JSON
 * objects), in the hashes versions before packed records kept, syncs on without a create or a write once
 * migrate-keys has packed them, and its call selection is the same.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectOverdue } from '../../src/calls/source.js';
import { ENTITIES } from '../../src/glossary.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { stateKey } from '../../src/state/keys.js';
import { packOldEntries, tenantsWithOldHashes } from '../../src/state/old-hashes.js';
import { PaymentLedger } from '../../src/state/payment-ledger.js';
import { packedKey, scanRecords } from '../../src/state/packed.js';
import { idOf, readVarint } from '../../src/state/packed-codec.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const TENANT = 'acme';
const UUID36 = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('state written before lean state values', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let data: SampleData;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-lean-'));
    data = sampleData({ contacts: 150, seed: 13, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeSampleFolder(folder, data);
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: TENANT, platform: { kind: 'file', path: folder } }] });
  });
  afterAll(async () => {
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  const selection = () =>
    selectOverdue(rig.app.mirror, {
      tenant: TENANT,
      campaignId: 'c-1',
      region: 'SA',
      remindersDisabled: new Set(),
      criteria: { overdueDays: 1, minAmount: 0, asOf: '2026-11-20' },
      currency: 'SAR',
    });

  /**
   * Rewrites the tenant's id maps, mirror and payment ledger as the versions before lean state wrote them, in
   * the hashes those versions kept (`ids`, `cache`, `ledger`), and drops the packed maps.
   */
  async function writeOldFormat(): Promise<number> {
    const { redis: r } = rig.app;
    const prefix = rig.env.KEY_PREFIX;
    let n = 0;
    for (const entity of ENTITIES) {
      const key = rig.app.stores.records.oldKey(TENANT, entity);
      for await (const batch of rig.app.stores.records.scan(TENANT, entity)) {
        for (const entry of batch) {
          // The old hash was the first 32 hex of the same sha256 whose first 18 hex are today's: only those 18 are read.
          const oldHash = entry.hash === undefined ? '' : `${entry.hash}${'7'.repeat(14)}`;
          await r.hset(key, entry.id, `${entry.uuid ?? ''}|${oldHash}`);
          n += 1;
        }
      }
    }
    for await (const batch of scanRecords(r, prefix, TENANT, 'payments', 3)) {
      const known = await new PaymentLedger(r, prefix).invoicesOf(TENANT, batch.map(([id]) => id));
    for (const [id, e] of known) await r.hset(stateKey(prefix, 'paymentLedger', TENANT, 'pay'), id, `${e.deleted ? 1 : 0}|${e.amount}|${e.invoiceId}`);
    }
    for await (const batch of scanRecords(r, prefix, TENANT, 'invoices', 3)) {
      for (const [id, segs] of batch) {
        const list: string[] = [];
        const seg = segs[2] as Buffer;
        for (let i = 0; i < seg.length; ) {
          const [len, at] = readVarint(seg, i) ?? [0, seg.length];
          list.push(idOf(seg.subarray(at, at + len)));
          i = at + len;
        }
        await r.hset(stateKey(prefix, 'paymentLedger', TENANT, 'inv'), id, JSON.stringify(list));
      }
    }
    // The mirror as the old writers put it: the contact projection with updatedAt and the Arabic first and last
    // names, the whole invoice record with its uuid and the outstanding amount pushed.
    const contacts = await rig.app.mirror.getMany(TENANT, 'contacts', data.contacts.map((c) => c.id));
    const invoices = await rig.app.mirror.getMany(TENANT, 'invoices', data.invoices.map((i) => i.id));
    await r.del(...ENTITIES.map((e) => packedKey(prefix, TENANT, e)));
    for (const rec of data.contacts) {
      const now = contacts.get(rec.id);
      if (!now) continue;
      const old: Record<string, unknown> = { id: rec.id, name: rec.name, deleted: rec.deleted, updatedAt: rec.updatedAt, uuid: now.uuid };
      for (const f of ['nameAr', 'firstName', 'firstNameAr', 'lastName', 'lastNameAr', 'phoneNumber'] as const) if (rec[f] !== undefined) old[f] = rec[f];
      await r.hset(stateKey(prefix, 'mirror', TENANT, 'contacts'), rec.id, JSON.stringify(old));
      n += 1;
    }
    for (const rec of data.invoices) {
      const now = invoices.get(rec.id);
      if (!now) continue;
      await r.hset(stateKey(prefix, 'mirror', TENANT, 'invoices'), rec.id, JSON.stringify({ ...rec, uuid: now.uuid, pushedOutstanding: now.pushedOutstanding ?? now.outstandingAmount }));
      n += 1;
    }
    return n;
  }

  /** Ids both in the packed map and in an old hash of the entity (an entry must be in exactly one place). */
  async function inTwoPlaces(): Promise<string[]> {
    const { redis: r } = rig.app;
    const prefix = rig.env.KEY_PREFIX;
    const out: string[] = [];
    for (const entity of ENTITIES) {
      const olds = [stateKey(prefix, 'ids', TENANT, entity), stateKey(prefix, 'mirror', TENANT, entity), stateKey(prefix, 'paymentLedger', TENANT, entity === 'payments' ? 'pay' : 'inv')];
      for await (const batch of scanRecords(r, prefix, TENANT, entity, 1)) {
        for (const [id] of batch) for (const k of olds) if ((await r.hexists(k, id)) === 1) out.push(`${entity} ${id} ${k}`);
      }
    }
    return out;
  }

  it('syncs on with no create and no write, and selects the same calls', async () => {
    const first = await rig.sync(TENANT, 'full');
    expect(first.outcome).toBe('succeeded');
    const before = await selection();
    expect(before.targets.length).toBeGreaterThan(0);

    const rewritten = await writeOldFormat();
    expect(rewritten).toBeGreaterThan(data.contacts.length + data.invoices.length / 2);
    const [oldId] = await rig.app.redis.hmget(rig.app.stores.records.oldKey(TENANT, 'contacts'), data.contacts[0]?.id ?? '');
    expect(oldId?.slice(0, 36)).toMatch(UUID36);
    expect(oldId?.length).toBe(36 + 1 + 32);
    // The worker reads packed records only: migrate-keys packs the old hashes first (their values as they are).
    expect(await packOldEntries(rig.app.redis, rig.env.KEY_PREFIX, TENANT, true)).toBeGreaterThan(data.contacts.length);
    expect(await tenantsWithOldHashes(rig.app.redis, rig.env.KEY_PREFIX, [TENANT])).toEqual([]);

    expect(await selection()).toEqual(before);
    const writes = rig.sim.counters().writesCommitted;
    const again = await rig.sync(TENANT, 'full');
    expect(again.outcome).toBe('succeeded');
    expect(rig.sim.counters().writesCommitted - writes).toBe(0);
    for (const [k, v] of Object.entries(again.counts)) if (/\.(created|updated)$/.test(k)) expect(v, k).toBe(0);
    expect(await selection()).toEqual(before);
    // What the run wrote moved in whole (id map, mirror and ledger of a record), and nothing is in two places.
    expect(await rig.app.redis.exists(packedKey(rig.env.KEY_PREFIX, TENANT, 'invoices'))).toBe(1);
    expect(await inTwoPlaces()).toEqual([]);
    const third = await rig.sync(TENANT, 'full');
    expect(third.outcome).toBe('succeeded');
    expect(rig.sim.counters().writesCommitted - writes).toBe(0);
    expect(await selection()).toEqual(before);
  });
});
