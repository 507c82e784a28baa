/**
 * A far-future updatedAt does not freeze incremental sync (issue 17): the record is pushed and reported, the
 * cursor stops at the run's start, and a real change made afterwards is read by the next incremental run. A
 * cursor an earlier version left in the future is set back by the next complete listing.
 */
import { describe, expect, it } from 'vitest';
import { useSampleRig } from '../helpers/sample-rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const CLIENT = 'client-acme';

describe('records stamped in the future', () => {
  const s = useSampleRig({ contacts: 20, seed: 17, logLevel: 'warn', writeSample: false });

  const nameInService = (id: string): string | null | undefined => s.rig.sim.data(CLIENT).contacts.find((c) => c.extPlatformId === id)?.name;

  it('keeps the cursor at the run start, reports the record, and the next run sees a real rename', async () => {
    const future = s.data.contacts[4]!;
    future.updatedAt = '2062-01-01T00:00:00.000Z';
    await writeSampleFolder(s.folder, s.data);
    const first = await s.rig.sync('acme', 'incremental');
    expect(first.outcome).toBe('succeeded');
    expect(nameInService(future.id)).toBe(future.name);
    expect(first.errors?.some((e) => e.includes(future.id) && e.includes('in the future'))).toBe(true);
    const cursor = await s.rig.app.stores.cursors.get('acme', 'contacts');
    expect(Date.parse(cursor!.highWater!.updatedAt)).toBeLessThanOrEqual(Date.now());

    const renamed = s.data.contacts[9]!;
    renamed.name = `${renamed.name} (renamed)`;
    renamed.updatedAt = new Date().toISOString();
    await writeSampleFolder(s.folder, s.data);
    const second = await s.rig.sync('acme', 'incremental');
    expect(second.outcome).toBe('succeeded');
    expect(nameInService(renamed.id)).toBe(renamed.name);
  });

  it('sets back a cursor left in the future, reading everything once', async () => {
    await s.rig.app.stores.cursors.set('acme', 'contacts', { highWater: { updatedAt: '2062-01-01T00:00:00.000Z', id: 'X' }, readPosition: { updatedAt: '2062-01-01T00:00:00.000Z', id: 'X' } });
    const renamed = s.data.contacts[11]!;
    renamed.name = `${renamed.name} (renamed again)`;
    renamed.updatedAt = '2026-11-02T00:00:00.000Z'; // behind the bad cursor: only a full read finds it
    await writeSampleFolder(s.folder, s.data);
    const run = await s.rig.sync('acme', 'incremental');
    expect(run.outcome).toBe('succeeded');
    expect(nameInService(renamed.id)).toBe(renamed.name);
    const cursor = await s.rig.app.stores.cursors.get('acme', 'contacts');
    expect(Date.parse(cursor!.highWater!.updatedAt)).toBeLessThanOrEqual(Date.now());
  });
});
