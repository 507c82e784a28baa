import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallStores, newCampaignId, parseCallList, resolveUnknown, waitForCampaign } from '../../src/calls/index.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { enqueueCampaign } from '../../src/queues/index.js';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { sampleData } from '../../src/sample/generate.js';
import type { SimulatorCounters } from '../../src/simulator/index.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { ExpositionError, parseExposition, sumOf, type Family } from './exposition.js';

const TOKEN_ROUTE = 'POST /auth/v1/api-key/auth';
const apiRequests = (c: SimulatorCounters): number =>
  Object.entries(c.requests)
    .filter(([route]) => route !== TOKEN_ROUTE)
    .reduce((n, [, byStatus]) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);

const FAMILIES = [
  'collections_sync_jobs_total',
  'collections_sync_runs_total',
  'collections_sync_run_duration_seconds',
  'collections_sync_records_total',
  'collections_sync_service_requests_total',
  'collections_sync_service_request_duration_seconds',
  'collections_sync_token_rotations_total',
  'collections_sync_unauthorized_total',
  'collections_sync_gate_wait_seconds',
  'collections_sync_queue_jobs',
  'collections_sync_cursor_lag_seconds',
  'collections_sync_last_success_timestamp_seconds',
  'collections_sync_build_info',
  'collections_sync_call_requests_total',
  'collections_sync_call_numbers_placed_total',
  'collections_sync_call_unknown_outcomes',
  'collections_sync_dead_letters',
  'collections_sync_pending_invoices',
];

describe('the ops port', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let base: string;
  let data: ReturnType<typeof sampleData>;

  const scrape = async (): Promise<{ text: string; families: Map<string, Family>; type: string | null }> => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    return { text, families: parseExposition(text), type: res.headers.get('content-type') };
  };

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-ops-metrics-'));
    data = sampleData({ contacts: 120, seed: 11, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
    await writeNdjson(join(folder, 'invoices.ndjson'), data.invoices);
    await writeNdjson(join(folder, 'payments.ndjson'), data.payments);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'file', path: folder }, extra: { calls: { defaultRegion: 'SA', requestSize: 1 } } }],
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

  it('serves /metrics that a strict parser reads, and its counters move with a sync', async () => {
    const before = await scrape();
    expect(before.type).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of FAMILIES) expect(before.families.has(name), name).toBe(true);
    const simBefore = rig.sim.counters();

    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    const after = await scrape();
    const simAfter = rig.sim.counters();
    const f = after.families;

    // Records by tenant, entity and outcome match the run's own counts.
    for (const key of ['contacts.created', 'invoices.created', 'invoices.skipped', 'payments.unlinked']) {
      const [entity = '', outcome = ''] = key.split('.');
      expect(sumOf(f, 'collections_sync_records_total', { tenant: 'acme', entity, outcome }), key).toBe(run.counts[key] ?? 0);
    }
    expect(run.counts['contacts.created']).toBe(120);
    // Requests to the service: what the worker counted is what the simulator answered, and each has a latency.
    const requests = sumOf(f, 'collections_sync_service_requests_total') - sumOf(before.families, 'collections_sync_service_requests_total');
    expect(requests).toBe(apiRequests(simAfter) - apiRequests(simBefore));
    expect(requests).toBeGreaterThan(120);
    expect(sumOf(f, 'collections_sync_service_requests_total', { route: '/contact', method: 'POST', status: '200' })).toBe(120);
    // The route label is the path template alone; outcome label values are snake_case in every family.
    const labelValues = (label: string): string[] => [...f.values()].flatMap((fam) => fam.samples.flatMap((x) => (x.labels[label] === undefined ? [] : [x.labels[label]])));
    expect(labelValues('route').length).toBeGreaterThan(0);
    for (const route of labelValues('route')) expect(route).toMatch(/^\/[^ ]*$/);
    expect(labelValues('outcome').length).toBeGreaterThan(0);
    for (const outcome of labelValues('outcome')) expect(outcome).toMatch(/^[a-z]+(_[a-z]+)*$/);
    const latencyCount = sumOf(f, 'collections_sync_service_request_duration_seconds', {}, 'collections_sync_service_request_duration_seconds_count');
    expect(latencyCount).toBe(sumOf(f, 'collections_sync_service_requests_total'));
    // Jobs, runs, rotations.
    expect(sumOf(f, 'collections_sync_jobs_total', { queue: 'sync', outcome: 'completed' }) - sumOf(before.families, 'collections_sync_jobs_total', { queue: 'sync', outcome: 'completed' })).toBe(1);
    expect(sumOf(f, 'collections_sync_runs_total', { tenant: 'acme', outcome: 'succeeded' })).toBe(1);
    expect(sumOf(f, 'collections_sync_run_duration_seconds', { tenant: 'acme' }, 'collections_sync_run_duration_seconds_count')).toBe(1);
    expect(sumOf(f, 'collections_sync_token_rotations_total')).toBe(simAfter.tokensIssuedTotal);
    expect(simAfter.tokensIssuedTotal).toBeGreaterThanOrEqual(1);
    // Gauges refreshed at scrape time.
    expect(f.get('collections_sync_queue_jobs')?.samples.some((s) => s.labels['queue'] === 'sync' && s.labels['state'] === 'waiting')).toBe(true);
    expect(sumOf(f, 'collections_sync_cursor_lag_seconds', { tenant: 'acme', entity: 'contacts' })).toBeGreaterThan(0);

    // An independent parser agrees on every counter and gauge series.
    const other = parsePrometheusTextFormat(after.text).filter((x) => x.type === 'COUNTER' || x.type === 'GAUGE');
    expect(other.length).toBeGreaterThanOrEqual(8);
    for (const fam of other) {
      const mine = f.get(fam.name);
      expect(mine, fam.name).toBeDefined();
      expect(fam.metrics.map((m) => Number(m.value)).reduce((a, b) => a + b, 0), fam.name).toBeCloseTo(sumOf(f, fam.name), 6);
      expect(fam.metrics).toHaveLength(mine?.samples.length ?? -1);
    }
  });

  it('answers /healthz and /readyz', async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
    expect(body.ready).toBe(true);
    expect(body.checks['redis']?.ok).toBe(true);
    expect(body.checks['workers']?.ok).toBe(true);
  });

  it('moves the call, dead-letter and pending-invoice families with a sync and a campaign (issue 16)', async () => {
    const before = (await scrape()).families;
    const tenant = { tenant: 'acme' };
    // A contact the record format refuses (a dead letter) and an invoice of a contact nobody knows (pending).
    const invoice = data.invoices[0];
    if (!invoice) throw new Error('the sample has no invoice');
    await appendFile(join(folder, 'contacts.ndjson'), `${JSON.stringify({ id: 'NO-NAME', updatedAt: '2026-11-10T00:00:00.000Z' })}\n`);
    await appendFile(join(folder, 'invoices.ndjson'), `${JSON.stringify({ ...invoice, id: 'WAITS', contactId: 'NOBODY', updatedAt: '2026-11-10T00:00:00.000Z' })}\n`);
    const run = await rig.sync('acme');
    expect(run.counts, JSON.stringify(run.counts)).toMatchObject({ 'contacts.badRecords': 1 }); // dead-lettered by its place
    expect(run.counts['invoices.pending']).toBe(1);

    // Three numbers, one request each; the service commits the first and the answer is lost: unknown.
    const calls = createCallStores(rig.app.redis, rig.env.KEY_PREFIX, { cooldownMs: rig.env.CALL_COOLDOWN_HOURS * 3_600_000 });
    const campaignId = newCampaignId('cmp');
    const list = parseCallList('number\n0547000001\n0547000002\n0547000003\n', 'csv', { tenant: 'acme', campaignId, region: 'SA' });
    expect(list.errors).toEqual([]);
    rig.sim.setFaults({ script: [{ route: 'POST /ai/phone-calls/action/call-bulk', fault: 'drop', count: 1 }] });
    await enqueueCampaign(rig.app.queues.calls, calls.store, { tenantId: 'acme', campaignId, requestedAt: Date.now(), overrides: {}, dryRun: false, source: { kind: 'list' } }, list.targets);
    await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });

    const after = (await scrape()).families;
    const moved = (name: string, labels: Record<string, string>): number => sumOf(after, name, labels) - sumOf(before, name, labels);
    expect(moved('collections_sync_call_requests_total', { ...tenant, outcome: 'sent' })).toBe(2);
    expect(moved('collections_sync_call_requests_total', { ...tenant, outcome: 'unknown' })).toBe(1);
    expect(moved('collections_sync_call_numbers_placed_total', tenant)).toBe(2);
    expect(moved('collections_sync_call_unknown_outcomes', tenant)).toBe(1);
    expect(moved('collections_sync_dead_letters', { ...tenant, entity: 'contacts' })).toBe(1);
    expect(moved('collections_sync_dead_letters', { ...tenant, entity: 'invoices' })).toBe(0);
    expect(moved('collections_sync_pending_invoices', tenant)).toBe(1);
    // The gauges say what the stores hold.
    expect(sumOf(after, 'collections_sync_dead_letters', tenant)).toBe((await rig.app.stores.deadLetters.counts('acme')).total);
    expect(sumOf(after, 'collections_sync_pending_invoices', tenant)).toBe(await rig.app.stores.pending.count('acme'));

    // An operator releases the unknown number: the gauge falls back.
    await resolveUnknown(calls.store, calls.callLedger, { tenant: 'acme', campaignId, action: 'release' });
    expect(sumOf((await scrape()).families, 'collections_sync_call_unknown_outcomes', tenant)).toBe(0);
  });

  it("runs the image's HEALTHCHECK command against the ops port (0 when up, 1 when nothing listens)", async () => {
    const dockerfile = await readFile(new URL('../../docker/Dockerfile', import.meta.url), 'utf8');
    const m = /^HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile);
    expect(m, 'a HEALTHCHECK ... CMD ["node", "-e", ...] in docker/Dockerfile').not.toBeNull();
    const argv = JSON.parse(m?.[1] ?? '[]') as string[];
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    const run = (port: number): Promise<number | null> =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, argv.slice(1), { env: { ...process.env, OPS_PORT: String(port) }, stdio: 'ignore' });
        child.once('error', reject);
        child.once('exit', (code) => resolve(code));
      });
    expect(await run(Number(new URL(base).port))).toBe(0);
    expect(await run(await freePort())).toBe(1);
  });

  it('the parser is strict: it refuses what the format forbids', () => {
    const ok = '# TYPE a_total counter\na_total{x="1"} 3\n';
    expect(parseExposition(ok).get('a_total')?.samples[0]?.value).toBe(3);
    // Go's ParseFloat spellings of the special values (prom-client writes NaN as `Nan`).
    expect(parseExposition('# TYPE g gauge\ng{x="a"} Nan\ng{x="b"} -inf\ng{x="c"} +Inf\n').get('g')?.samples.map((x) => x.value)).toEqual([NaN, -Infinity, Infinity]);
    const bad = [
      'garbage line here\n',
      '# TYPE a_total counter\na_total{x="1" 3\n',
      '# TYPE a_total counter\na_total{x="a\\q"} 3\n',
      '# TYPE a_total counter\na_total 1\na_total 2\n',
      '# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x="y"} 2\n',
      '# TYPE a_total counter\na_total -1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n',
      '# TYPE a gauge\na 1',
      '# TYPE a gauge\na NaNa\n',
    ];
    for (const text of bad) expect(() => parseExposition(text), JSON.stringify(text)).toThrow(ExpositionError);
  });
});

describe('metric names', () => {
  it('keeps the process and Node.js families unprefixed, as the stock dashboards expect, and says what runs', async () => {
    const metrics = createMetrics();
    const f = parseExposition(await metrics.registry.metrics());
    const names = [...f.keys()];
    for (const name of ['process_cpu_user_seconds_total', 'process_start_time_seconds', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) expect(names, name).toContain(name);
    expect(names.filter((n) => !n.startsWith('collections_sync_') && !n.startsWith('process_') && !n.startsWith('nodejs_'))).toEqual([]);
    expect(names.filter((n) => /^collections_sync_(process|nodejs)_/.test(n))).toEqual([]);
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(f.get('collections_sync_build_info')?.samples).toEqual([{ name: 'collections_sync_build_info', labels: { version, node: process.version }, value: 1 }]);
  });

  it('writes outcome label values in snake_case whatever the caller says', async () => {
    const metrics = createMetrics({ defaultMetrics: false, version: '9.9.9' });
    metrics.records.inc({ tenant: 'acme', entity: 'invoices', outcome: 'deadLettered' }, 2);
    metrics.records.inc({ tenant: 'acme', entity: 'contacts', outcome: 'badRecords' });
    metrics.records.inc({ tenant: 'acme', entity: 'contacts', outcome: 'created' });
    metrics.runs.inc({ tenant: 'acme', outcome: 'partial' });
    const f = parseExposition(await metrics.registry.metrics());
    expect(f.get('collections_sync_records_total')?.samples.map((x) => [x.labels['outcome'], x.value])).toEqual([
      ['dead_lettered', 2],
      ['bad_records', 1],
      ['created', 1],
    ]);
    expect(sumOf(f, 'collections_sync_runs_total', { outcome: 'partial' })).toBe(1);
    expect(sumOf(f, 'collections_sync_build_info', { version: '9.9.9' })).toBe(1);
  });
});
