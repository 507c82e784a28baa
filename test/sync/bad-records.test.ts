import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const T = '2026-11-02T08:15:00Z';
const contact = (id: string, extra: Record<string, unknown> = {}) => JSON.stringify({ id, updatedAt: T, name: `Company ${id}`, ...extra });
const invoice = (id: string, contactId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, contactId, updatedAt: T, status: 'AUTHORISED', number: `N-${id}`, date: '2026-10-01', dueDate: '2026-10-31', total: 100, ...extra });

describe('bad records are reported with their place and reason; the rest lands', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-bad-'));
    await writeFile(
      join(folder, 'contacts.ndjson'),
      [
        contact('C1'),
        '{"id": "C2", "name": "broken json",',
        contact('C3', { name: 'x'.repeat(300) }),
        contact('C4', { email: 'not-an-email', nameAr: 'شركة الاختبار' }),
        JSON.stringify({ id: 'C5', updatedAt: T }),
        contact('C6'),
      ].join('\n') + '\n',
    );
    await writeFile(
      join(folder, 'invoices.ndjson'),
      [
        invoice('I1', 'C1'),
        invoice('I2', 'NOPE'),
        invoice('I3', 'C1', { total: -5 }),
        invoice('I4', 'C6', { dueDate: '2026-13-45' }),
        invoice('I5', 'C6'),
        invoice('I6', 'C7', { updatedAt: '2026-10-01T00:00:00Z' }),
        invoice('I7', 'GONE', { status: 'VOIDED' }),
      ].join('\n') + '\n',
    );
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'file', path: folder } }], env: { PENDING_MAX_WAIT_S: '0' } });
  });
  afterAll(async () => {
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('dead-letters every kind of bad record with file, line and reason, and pushes every good one', async () => {
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('partial');
    const letters = await rig.app.stores.deadLetters.list('acme', { limit: 100 });
    const find = (pred: (d: (typeof letters)[number]) => boolean) => letters.find(pred);

    expect(find((d) => d.place === 'contacts.ndjson:2')?.reason).toMatch(/JSON/i);
    expect(find((d) => d.place === 'contacts.ndjson:3')?.reason).toMatch(/name/);
    expect(find((d) => d.place === 'contacts.ndjson:3')?.platformId).toBe('C3');
    expect(find((d) => d.place === 'contacts.ndjson:5')?.reason).toMatch(/name/);
    expect(find((d) => d.place === 'invoices.ndjson:3')?.reason).toMatch(/total/);
    expect(find((d) => d.place === 'invoices.ndjson:4')?.reason).toMatch(/dueDate/);
    const orphan = find((d) => d.entity === 'invoices' && d.platformId === 'I2');
    expect(orphan?.code).toBe('CONTACT_NOT_MAPPED');
    expect(orphan?.reason).toMatch(/NOPE/);
    // A voided invoice whose contact never comes waits like any other, then is let go: nothing to collect or stop.
    expect(find((d) => d.platformId === 'I7')).toBeUndefined();
    expect(run.counts['invoices.skipped']).toBeGreaterThanOrEqual(1);
    expect(await rig.app.stores.pending.list('acme')).toEqual([]);
    expect(letters).toHaveLength(7);

    const stored = rig.sim.data('client-acme');
    expect(stored.contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C4', 'C6']);
    expect(stored.invoices.map((i) => i.extPlatformId).sort()).toEqual(['I1', 'I5']);
    const c4 = stored.contacts.find((c) => c.extPlatformId === 'C4');
    expect(c4?.email).toBeNull();
    expect(c4?.hasErrors).toBe(true);
    expect(JSON.stringify(c4?.errorDetail)).toMatch(/email/);
    expect(c4?.nameAr).toBe('شركة الاختبار');
    expect(run.errors.some((e) => e.includes('contacts.ndjson:2'))).toBe(true);
  });

  it('a record that can be pushed later leaves the dead letters; a replay pushes those the cursor has passed', async () => {
    const later = '2026-11-03T00:00:00Z';
    await writeFile(
      join(folder, 'contacts.ndjson'),
      [contact('C1'), contact('C6'), contact('NOPE', { updatedAt: later }), contact('C7', { updatedAt: later })].join('\n') + '\n',
    );
    // I2 is within the lookback, so the incremental run reads it again and pushes it now that NOPE exists.
    const run = await rig.sync('acme');
    expect(run.counts['contacts.created']).toBe(2);
    expect(run.counts['invoices.created']).toBe(1);
    let left = await rig.app.stores.deadLetters.list('acme', { limit: 100 });
    expect(left.find((d) => d.platformId === 'I2')).toBeUndefined();
    // I6 is older than cursor - lookback: only a replay of the dead letters brings it.
    expect(left.find((d) => d.platformId === 'I6')?.code).toBe('CONTACT_NOT_MAPPED');
    const replay = await rig.sync('acme', 'replay');
    expect(replay.counts['invoices.created']).toBe(1);
    left = await rig.app.stores.deadLetters.list('acme', { limit: 100 });
    expect(left.find((d) => d.platformId === 'I6')).toBeUndefined();
    expect(rig.sim.data('client-acme').invoices.map((i) => i.extPlatformId).sort()).toEqual(['I1', 'I2', 'I5', 'I6']);
    // The broken line was replaced at the source: after a complete listing its dead letter is gone too.
    expect(left.find((d) => d.place === 'contacts.ndjson:2')).toBeUndefined();
    expect(left.find((d) => d.place === 'invoices.ndjson:3')).toBeDefined();
  });
});
