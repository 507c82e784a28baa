/**
 * `dead-letters retry` (a replay run) ends every dead letter whose record is now in the service: a record the
 * service refused (422) and now accepts is pushed once and leaves the dead letters; a record whose identical
 * content is already in the service with an id-map entry (a dead letter left behind, as a crash between the
 * id-map write and the dead letter's removal leaves it) leaves them with no request. An ordinary run does the
 * same for the records it reads. Real Redis, the simulator with scripted 422s, file tenants.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Entity } from '../../src/glossary.js';
import { checkRecord } from '../../src/platforms/records.js';
import { DEFAULT_FAULTS } from '../../src/simulator/index.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const T = '2026-11-02T08:15:00Z';
const contact = (id: string, extra: Record<string, unknown> = {}) => ({ id, updatedAt: T, name: `Company ${id}`, ...extra });
const invoice = (id: string, contactId: string, extra: Record<string, unknown> = {}) => ({
  id,
  contactId,
  updatedAt: T,
  status: 'AUTHORISED',
  number: `N-${id}`,
  date: '2026-10-01',
  dueDate: '2026-10-31',
  total: 100,
  ...extra,
});
const ndjson = (rows: object[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const TENANTS = ['refused', 'kept', 'ordinary'] as const;

describe('a replay ends the dead letters of records now in the service', () => {
  let redis: TestRedis;
  let rig: Rig;
  let root: string;
  const folder = (tenant: string) => join(root, tenant);
  const write = async (tenant: string, entity: Entity, rows: object[]) => writeFile(join(folder(tenant), `${entity}.ndjson`), ndjson(rows));
  const letters = async (tenant: string) => (await rig.app.stores.deadLetters.list(tenant, { limit: 100 })).map((d) => `${d.entity} ${d.platformId ?? d.place}`).sort();
  /** Requests to the service (the token endpoint left out), and writes it committed. */
  const traffic = () => {
    const c = rig.sim.counters();
    let requests = 0;
    for (const [route, byStatus] of Object.entries(c.requests)) if (!route.includes('/auth/')) for (const n of Object.values(byStatus)) requests += n;
    return { requests, writes: c.writesCommitted };
  };
  const stored = (tenant: string) => rig.sim.data(`client-${tenant}`);

  beforeAll(async () => {
    redis = await startTestRedis();
    root = await mkdtemp(join(tmpdir(), 'cs-replay-'));
    for (const t of TENANTS) await mkdir(folder(t));
    rig = await startRig({ redisUrl: redis.url, tenants: TENANTS.map((id) => ({ id, platform: { kind: 'file', path: folder(id) } })), logLevel: 'warn' });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });
  beforeEach(() => rig.sim.setFaults(DEFAULT_FAULTS));

  it('pushes again, once, a record the service refused with a 422 and now accepts: its dead letter goes (every entity)', async () => {
    const t = 'refused';
    await write(t, 'contacts', [contact('C1'), contact('C2')]);
    await write(t, 'invoices', [invoice('I1', 'C1'), invoice('I2', 'C2'), invoice('I3', 'C2', { total: 80 })]);
    expect((await rig.sync(t, 'full')).outcome).toBe('succeeded');
    const i3 = stored(t).invoices.find((i) => i.extPlatformId === 'I3')!;
    const seeded = rig.sim.seedPayment(`client-${t}`, { invoiceUuid: i3.uuid, amount: 30, date: '2026-10-05' });
    await write(t, 'payments', [{ id: 'P1', invoiceId: 'I3', updatedAt: T, amount: 30, date: '2026-10-05', paymentUuid: seeded.uuid }]);
    expect((await rig.sync(t, 'full')).counts['payments.updated']).toBe(1);
    const hashes = async (entity: Entity, id: string) => (await rig.app.stores.records.get(t, entity, id))?.hash;
    const before = { C2: await hashes('contacts', 'C2'), I2: await hashes('invoices', 'I2'), P1: await hashes('payments', 'P1') };

    // A new contact refused on its create; changed records refused on their update.
    await write(t, 'contacts', [contact('C1'), contact('C2', { name: 'Company C2 Renamed' }), contact('C3')]);
    await write(t, 'invoices', [invoice('I1', 'C1'), invoice('I2', 'C2', { dueDate: '2026-11-30' }), invoice('I3', 'C2', { total: 80 }), invoice('I4', 'C3')]);
    await write(t, 'payments', [{ id: 'P1', invoiceId: 'I3', updatedAt: T, amount: 35, date: '2026-10-05', paymentUuid: seeded.uuid }]);
    rig.sim.setFaults({
      script: [
        { route: 'POST /contact', fault: '422', count: 1, matching: '"extPlatformId":"C3"' },
        { route: 'PUT /contact', fault: '422', count: 1, matching: 'Company C2 Renamed' },
        { route: 'POST /invoice/create-update', fault: '422', count: 1, matching: '"extPlatformId":"I2"' },
        { route: 'PUT /invoice/payment/{uuid}', fault: '422', count: 1, matching: seeded.uuid },
      ],
    });
    const refused = await rig.sync(t, 'full');
    expect(refused.outcome).toBe('partial');
    expect(await letters(t)).toEqual(['contacts C2', 'contacts C3', 'invoices I2', 'payments P1']);
    expect((await rig.app.stores.deadLetters.list(t, { entity: 'contacts' }))[0]?.reason).toMatch(/rejected by the service/);
    // A refused record's hash stays the one last pushed (none for a record never pushed): a replay sends it again.
    expect(await hashes('contacts', 'C3')).toBeUndefined();
    expect({ C2: await hashes('contacts', 'C2'), I2: await hashes('invoices', 'I2'), P1: await hashes('payments', 'P1') }).toEqual(before);
    expect(await rig.app.stores.pending.list(t)).toHaveLength(1); // I4 waits for C3

    rig.sim.setFaults(DEFAULT_FAULTS);
    const replay = await rig.sync(t, 'replay');
    expect(replay.outcome).toBe('succeeded');
    expect(await letters(t)).toEqual([]);
    expect(replay.counts).toMatchObject({ 'contacts.created': 1, 'contacts.updated': 1, 'invoices.updated': 1, 'payments.updated': 1, 'invoices.created': 1 });
    expect(replay.counts['contacts.resolved']).toBe(2);
    expect(replay.counts['invoices.resolved']).toBe(1);
    expect(replay.counts['payments.resolved']).toBe(1);
    const now = stored(t);
    expect(now.contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C2', 'C3']);
    expect(now.contacts.find((c) => c.extPlatformId === 'C2')?.name).toBe('Company C2 Renamed');
    expect(now.invoices.map((i) => i.extPlatformId).sort()).toEqual(['I1', 'I2', 'I3', 'I4']);
    expect(now.invoices.find((i) => i.extPlatformId === 'I2')?.dueDate).toBe('2026-11-30');
    expect(now.payments.find((p) => p.uuid === seeded.uuid)?.amount).toBe(35);

    // Nothing is left to replay: a second replay sends nothing.
    const quiet = traffic();
    expect((await rig.sync(t, 'replay')).outcome).toBe('succeeded');
    expect(traffic()).toEqual(quiet);
  });

  /** A pushed record of every entity, then a dead letter for each with its identical content (left behind). */
  const pushedWithDeadLetters = async (t: string) => {
    if (stored(t).contacts.length === 0) {
      await write(t, 'contacts', [contact('C1')]);
      await write(t, 'invoices', [invoice('I1', 'C1')]);
      expect((await rig.sync(t, 'full')).outcome).toBe('succeeded');
      const i1 = stored(t).invoices.find((i) => i.extPlatformId === 'I1')!;
      const seeded = rig.sim.seedPayment(`client-${t}`, { invoiceUuid: i1.uuid, amount: 40, date: '2026-10-05' });
      await write(t, 'payments', [{ id: 'P1', invoiceId: 'I1', updatedAt: T, amount: 40, date: '2026-10-05', paymentUuid: seeded.uuid }]);
      expect((await rig.sync(t, 'full')).counts['payments.updated']).toBe(1);
    }
    const raw = {
      contacts: contact('C1'),
      invoices: invoice('I1', 'C1'),
      payments: { id: 'P1', invoiceId: 'I1', updatedAt: T, amount: 40, date: '2026-10-05', paymentUuid: stored(t).payments[0]!.uuid },
    };
    for (const entity of ['contacts', 'invoices', 'payments'] as const) {
      const checked = checkRecord(entity, raw[entity]);
      if (!checked.ok) throw new Error(checked.reason);
      await rig.app.stores.deadLetters.add(t, [
        { entity, platformId: checked.record.id, record: checked.record, reason: 'rejected by the service: fixed since', code: 'COLLECTIONS_VALIDATION', runId: 'run-old', at: Date.now() },
      ]);
    }
    expect(await letters(t)).toEqual(['contacts C1', 'invoices I1', 'payments P1']);
  };

  it('clears, with no request, the dead letter of a record whose identical content is in the service with an id map', async () => {
    const t = 'kept';
    await pushedWithDeadLetters(t);
    const before = traffic();
    const replay = await rig.sync(t, 'replay');
    expect(traffic(), 'no request: the content is in the service').toEqual(before);
    expect(await letters(t)).toEqual([]);
    expect(replay.outcome).toBe('succeeded');
    expect(replay.counts).toMatchObject({ 'contacts.skipped': 1, 'invoices.skipped': 1, 'payments.skipped': 1 });
    expect(replay.counts).toMatchObject({ 'contacts.resolved': 1, 'invoices.resolved': 1, 'payments.resolved': 1, resolved: 3 });
    expect(stored(t).contacts).toHaveLength(1);
    expect(stored(t).invoices).toHaveLength(1);
  });

  it('an ordinary run that finds such a record unchanged and mapped clears its dead letter too, with no request', async () => {
    const t = 'ordinary';
    await pushedWithDeadLetters(t);
    const before = traffic();
    const run = await rig.sync(t, 'full');
    expect(traffic()).toEqual(before);
    expect(await letters(t)).toEqual([]);
    expect(run.outcome).toBe('succeeded');
    expect(run.counts).toMatchObject({ 'contacts.skipped': 1, 'invoices.skipped': 1, 'payments.skipped': 1, resolved: 3 });
  });

  it('a payment deleted at the source since it was dead-lettered leaves the dead letters: a replay never pushes its older content', async () => {
    const t = 'ordinary';
    const uuid = stored(t).payments[0]!.uuid;
    const older = checkRecord('payments', { id: 'P1', invoiceId: 'I1', updatedAt: T, amount: 45, date: '2026-10-05', paymentUuid: uuid });
    if (!older.ok) throw new Error(older.reason);
    await rig.app.stores.deadLetters.add(t, [{ entity: 'payments', platformId: 'P1', record: older.record, reason: 'rejected by the service', code: 'COLLECTIONS_VALIDATION', runId: 'run-old', at: Date.now() }]);
    await write(t, 'payments', [{ id: 'P1', invoiceId: 'I1', updatedAt: '2026-11-03T00:00:00Z', amount: 40, date: '2026-10-05', paymentUuid: uuid, deleted: true }]);
    const run = await rig.sync(t, 'full');
    expect(run.counts).toMatchObject({ 'payments.skipped': 1, 'payments.resolved': 1, 'invoices.updated': 1 });
    expect(await letters(t)).toEqual([]);
    const quiet = traffic();
    await rig.sync(t, 'replay');
    expect(traffic()).toEqual(quiet);
    expect(stored(t).payments[0]?.amount).toBe(40);
  });
});
