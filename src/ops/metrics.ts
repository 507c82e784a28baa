/**
 * Prometheus metrics (prom-client), one registry per process. The rooms take plain callbacks (hooks); this
 * module turns them into counters and histograms, so nothing below the composition root imports prom-client.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  jobs: Counter<'queue' | 'outcome'>;
  runs: Counter<'tenant' | 'outcome'>;
  runSeconds: Histogram<'tenant'>;
  records: Counter<'tenant' | 'entity' | 'outcome'>;
  httpRequests: Counter<'route' | 'method' | 'status'>;
  httpSeconds: Histogram<'route' | 'method'>;
  rotations: Counter<'client' | 'reason'>;
  unauthorized: Counter<'reason'>;
  gateWaitSeconds: Histogram;
  queueDepth: Gauge<'queue' | 'state'>;
  cursorLagSeconds: Gauge<'tenant' | 'entity'>;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'collections_sync_' });
  const r = [registry];
  return {
    registry,
    jobs: new Counter({ name: 'collections_sync_jobs_total', help: 'Jobs ended, by queue and outcome', labelNames: ['queue', 'outcome'], registers: r }),
    runs: new Counter({ name: 'collections_sync_runs_total', help: 'Sync runs ended, by tenant and outcome', labelNames: ['tenant', 'outcome'], registers: r }),
    runSeconds: new Histogram({
      name: 'collections_sync_run_duration_seconds',
      help: 'Duration of sync runs',
      labelNames: ['tenant'],
      buckets: [1, 5, 15, 60, 300, 900, 3600, 14400],
      registers: r,
    }),
    records: new Counter({
      name: 'collections_sync_records_total',
      help: 'Records by tenant, entity and outcome (created, updated, skipped, deadLettered, adopted, pending, unlinked, badRecords)',
      labelNames: ['tenant', 'entity', 'outcome'],
      registers: r,
    }),
    httpRequests: new Counter({
      name: 'collections_sync_service_requests_total',
      help: 'Requests to the collections service by route, method and status',
      labelNames: ['route', 'method', 'status'],
      registers: r,
    }),
    httpSeconds: new Histogram({
      name: 'collections_sync_service_request_duration_seconds',
      help: 'Latency of requests to the collections service',
      labelNames: ['route', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    rotations: new Counter({ name: 'collections_sync_token_rotations_total', help: 'Token rotations by client and reason', labelNames: ['client', 'reason'], registers: r }),
    unauthorized: new Counter({ name: 'collections_sync_unauthorized_total', help: '401 answers by reason', labelNames: ['reason'], registers: r }),
    gateWaitSeconds: new Histogram({
      name: 'collections_sync_gate_wait_seconds',
      help: 'Time requests waited at the token gate',
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    queueDepth: new Gauge({ name: 'collections_sync_queue_jobs', help: 'Jobs per queue and state', labelNames: ['queue', 'state'], registers: r }),
    cursorLagSeconds: new Gauge({
      name: 'collections_sync_cursor_lag_seconds',
      help: 'Now minus the high-water mark of each tenant and entity',
      labelNames: ['tenant', 'entity'],
      registers: r,
    }),
  };
}
