/**
 * An export where records appear again further down (an updated line appended), spread over pages that are
 * pushed at the same time: each record is still created once, and its last version wins.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeNdjson } from '../../src/platforms/file/index.js';
import type { ContactRecord } from '../../src/platforms/records.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('records repeated across pages pushed at once', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  const contacts = sampleData({ contacts: 300, seed: 21 }).contacts;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-dup-'));
    // Pages of 10 lines: every contact of page k comes again, renamed, in page k+1 or k+2.
    const lines: ContactRecord[] = [];
    for (let i = 0; i < contacts.length; i += 10) {
      const chunk = contacts.slice(i, i + 10);
      lines.push(...chunk);
      if (i >= 10) lines.push(...contacts.slice(i - 10, i).map((c) => ({ ...c, name: `${c.name} v2` })));
    }
    await writeNdjson(join(folder, 'contacts.ndjson'), lines);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'dup', platform: { kind: 'file', path: folder } }],
      simulator: { faults: { latencyMs: 3, jitterMs: 3 } },
      env: { SYNC_PAGE_SIZE: '10', SYNC_CONCURRENCY: '8' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('creates each contact once and keeps its last version', async () => {
    const run = await rig.sync('dup');
    expect(run.outcome).toBe('succeeded');
    const stored = rig.sim.data('client-dup').contacts;
    expect(stored).toHaveLength(contacts.length);
    expect(new Set(stored.map((c) => c.extPlatformId)).size).toBe(contacts.length);
    const last = contacts.slice(0, contacts.length - 10);
    for (const c of last) expect(stored.find((s) => s.extPlatformId === c.id)?.name).toBe(`${c.name} v2`);
  });
});
