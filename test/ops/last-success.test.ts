/**
 * How far behind the sync is: `collections_sync_last_success_timestamp_seconds` after a real sync of quiet data
 * (records last changed weeks ago) says "just now", where the cursor lag says "weeks" (the age of the newest record).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';
import { parseExposition, type Family } from './exposition.js';

const LAST_SUCCESS = 'collections_sync_last_success_timestamp_seconds';
const CURSOR_LAG = 'collections_sync_cursor_lag_seconds';

describe('the time since the last successful run, per tenant', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let base: string;

  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  };
  const sample = (families: Map<string, Family>, name: string, labels: Record<string, string>): number | undefined =>
    families.get(name)?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-last-success-'));
    // Quiet data: nothing changed since 2026-11-01.
    await writeSampleFolder(folder, sampleData({ contacts: 15, seed: 3, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') }));
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'file', path: folder } },
        { id: 'idle', platform: { kind: 'file', path: folder } },
      ],
      worker: { opsPort: 'random' },
    });
    const port = rig.worker?.ops?.port;
    if (port === undefined) throw new Error('the ops server did not start');
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await rig?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('is a gauge with no series before a tenant has ever synced', async () => {
    const f = await scrape();
    expect(f.get(LAST_SUCCESS)?.type).toBe('gauge');
    expect(sample(f, LAST_SUCCESS, { tenant: 'acme' })).toBeUndefined();
  });

  it('reads "just now" right after a sync of quiet data, where the cursor lag reads weeks', async () => {
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    const f = await scrape();
    const at = sample(f, LAST_SUCCESS, { tenant: 'acme' });
    expect(at).toBeDefined();
    // The run's own end, from the run history in Redis (every worker process exports the same value).
    expect(at).toBeCloseTo((run.finishedAt ?? 0) / 1000, 3);
    const age = Date.now() / 1000 - (at ?? 0);
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(30);
    // The old metric measures the age of the newest record: weeks, for the same, fully synced tenant.
    expect(sample(f, CURSOR_LAG, { tenant: 'acme', entity: 'contacts' })).toBeGreaterThan(86_400);
    // A tenant that has not run has no series (absent, not 0: "never" is not "1970").
    expect(sample(f, LAST_SUCCESS, { tenant: 'idle' })).toBeUndefined();
  });

  it('stays at the last success while later runs fail; a partial run (all read, some dead-lettered) counts', async () => {
    const runs = rig.app.stores.runs;
    const before = sample(await scrape(), LAST_SUCCESS, { tenant: 'acme' });
    const finishedAt = Date.now() + 5_000;
    await runs.start('acme', { runId: 'failed-run', mode: 'incremental', startedAt: finishedAt - 1_000, trigger: 'test' });
    await runs.finish('acme', 'failed-run', { outcome: 'failed', finishedAt, counts: {}, errors: ['boom'] });
    expect(sample(await scrape(), LAST_SUCCESS, { tenant: 'acme' })).toBe(before);
    await runs.start('acme', { runId: 'partial-run', mode: 'incremental', startedAt: finishedAt, trigger: 'test' });
    await runs.finish('acme', 'partial-run', { outcome: 'partial', finishedAt: finishedAt + 1_000, counts: {}, errors: [] });
    expect(sample(await scrape(), LAST_SUCCESS, { tenant: 'acme' })).toBe((finishedAt + 1_000) / 1000);
  });
});
