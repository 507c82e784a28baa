/**
 * METRICS_TENANT_LABELS (decision 0273): with `off` (what `auto` turns to beyond 1,000 tenants), /metrics holds one
 * series for all tenants (`tenant="*"`): run and record counters add up every tenant's, the scrape-time gauges are
 * sums, the last success is the oldest tenant's, and no series names a tenant. `auto` decides by the number of tenants.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perTenantSeries, PER_TENANT_SERIES_MAX } from '../../src/app.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';
import { parseExposition, sumOf, type Family } from './exposition.js';

describe('METRICS_TENANT_LABELS=auto', () => {
  it('keeps a series per tenant up to PER_TENANT_SERIES_MAX tenants and one for all beyond', () => {
    let tenants = PER_TENANT_SERIES_MAX;
    expect(perTenantSeries('auto', () => tenants)()).toBe(true);
    tenants += 1;
    expect(perTenantSeries('auto', () => tenants)()).toBe(false);
    expect(perTenantSeries('on', () => 1_000_000)()).toBe(true);
    expect(perTenantSeries('off', () => 1)()).toBe(false);
  });
});

describe('METRICS_TENANT_LABELS=off: one series for all tenants', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let base: string;

  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  };

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-tenant-labels-'));
    await writeSampleFolder(folder, sampleData({ contacts: 12, seed: 5, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') }));
    rig = await startRig({
      redisUrl: redis.url,
      env: { METRICS_TENANT_LABELS: 'off' },
      tenants: [
        { id: 'acme', platform: { kind: 'file', path: folder } },
        { id: 'globex', platform: { kind: 'file', path: folder } },
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

  it('adds up the tenants in tenant="*", names none of them, and gives the oldest last success', async () => {
    const first = await rig.sync('acme');
    const second = await rig.sync('globex');
    expect([first.outcome, second.outcome]).toEqual(['succeeded', 'succeeded']);
    await rig.app.stores.deadLetters.add('globex', [{ entity: 'contacts', platformId: 'C-x', reason: 'a test dead letter', code: 'bad_record', runId: 'run-x', at: Date.now() }]);
    const f = await scrape();

    expect(sumOf(f, 'collections_sync_runs_total', { tenant: '*', outcome: 'succeeded' })).toBe(2);
    const created = (first.counts['contacts.created'] ?? 0) + (second.counts['contacts.created'] ?? 0);
    expect(created).toBeGreaterThan(0);
    expect(sumOf(f, 'collections_sync_records_total', { tenant: '*', entity: 'contacts', outcome: 'created' })).toBe(created);
    expect(sumOf(f, 'collections_sync_dead_letters', { tenant: '*', entity: 'contacts' })).toBe(1);
    // The oldest of the tenants' last successes (the idle tenant has none): how far behind the most behind one is.
    const lastSuccess = f.get('collections_sync_last_success_timestamp_seconds')?.samples ?? [];
    expect(lastSuccess).toHaveLength(1);
    expect(lastSuccess[0]?.labels['tenant']).toBe('*');
    expect(lastSuccess[0]?.value).toBeCloseTo((first.finishedAt ?? 0) / 1000, 3);
    // A per-tenant figure with no meaning for all: not written.
    expect(f.get('collections_sync_cursor_lag_seconds')?.samples ?? []).toEqual([]);

    const tenantsNamed = new Set<string>();
    for (const family of f.values()) for (const s of family.samples) if (s.labels['tenant'] !== undefined) tenantsNamed.add(s.labels['tenant']);
    expect([...tenantsNamed]).toEqual(['*']);
  });
});
