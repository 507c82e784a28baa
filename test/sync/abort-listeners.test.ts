/**
 * Waits remove their abort listeners when they end (issue 12): a run with many ambiguous contact creates (each
 * waits before looking the contact up) prints no MaxListenersExceededWarning.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

describe('abort listeners end with their waits', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let data: SampleData;
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-listeners-'));
    data = sampleData({ contacts: 120, seed: 9, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeSampleFolder(folder, data);
    // A window of 32 records (2 request slots): the run's signals take that many listeners at once, no more.
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'file', path: folder } }],
      env: { SYNC_CONCURRENCY: '2', SYNC_PAGE_SIZE: '10' },
      logLevel: 'warn',
    });
    process.on('warning', onWarning);
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('runs 100 ambiguous creates in one run without a MaxListenersExceededWarning', async () => {
    // Committed, then the answer lost: each of these creates waits, looks the contact up and adopts it.
    rig.sim.setFaults({ script: [{ route: 'POST /contact', fault: 'drop', count: 100 }] });
    const run = await rig.sync('acme', 'full');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.adopted']).toBe(100);
    expect(rig.sim.data('client-acme').contacts).toHaveLength(data.contacts.length);
    // Warnings are emitted on the next tick.
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});
