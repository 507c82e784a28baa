/**
 * Prometheus metrics (prom-client), one registry per process. The rooms take plain callbacks (hooks); this
 * module turns them into counters and histograms, so nothing below the composition root imports prom-client.
 *
 * Naming, as prom-client and stock dashboards expect: our families start with `collections_sync_`; the process
 * and Node.js families of `collectDefaultMetrics` keep their own names (`process_*`, `nodejs_*`); label values of
 * `outcome` are snake_case (`dead_lettered`) whatever the spelling of the caller's word (run counts say
 * `deadLettered`); `route` is the path template alone, the method has its own label.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type LabelValues } from 'prom-client';
import { packageVersion } from '../version.js';

/** A counter with an `outcome` label, written in snake_case. */
export interface OutcomeCounter<L extends string> {
  inc(labels: LabelValues<L> & { outcome: string }, value?: number): void;
}

export interface Metrics {
  registry: Registry;
  jobs: OutcomeCounter<'queue' | 'outcome'>;
  runs: OutcomeCounter<'tenant' | 'outcome'>;
  runSeconds: Histogram<'tenant'>;
  /** Run attempts the stall watchdog ended: no progress within RUN_STALL_S (decision 156). */
  runStalls: Counter<'tenant'>;
  /**
   * When the tenant's running run last made progress (a record decided, a request answered, a page read), Unix
   * seconds, from the process running it; no series while no run of the tenant runs here. `time() - this` is how
   * long a running run has been quiet.
   */
  runProgressTimestamp: Gauge<'tenant'>;
  records: OutcomeCounter<'tenant' | 'entity' | 'outcome'>;
  httpRequests: Counter<'route' | 'method' | 'status'>;
  httpSeconds: Histogram<'route' | 'method'>;
  rotations: Counter<'client' | 'reason'>;
  unauthorized: Counter<'reason'>;
  gateWaitSeconds: Histogram;
  queueDepth: Gauge<'queue' | 'state'>;
  /**
   * Set at scrape time: now minus the `updatedAt` of the newest record synced, per tenant and entity. The age of
   * the newest data, not how far behind the sync is: quiet data reads days right after a successful run.
   */
  cursorLagSeconds: Gauge<'tenant' | 'entity'>;
  /**
   * Set at scrape time from the run history in Redis (every process exports the same value): when the tenant's last
   * run that read every entity to its end (succeeded or partial) finished, in Unix seconds. No series before the
   * first. How far behind the sync is: `time() - max by (tenant) (this)` is what to alert on.
   */
  lastSuccessTimestamp: Gauge<'tenant'>;
  /** Call requests (one bulk or single call each) by tenant and outcome: sent, unknown, failed, not_sent, skipped, cancelled. */
  callRequests: OutcomeCounter<'tenant' | 'outcome'>;
  /** Numbers in call requests the service accepted. */
  callNumbersPlaced: Counter<'tenant'>;
  /** Set at scrape time, per tenant: unknown call outcomes waiting for an operator, dead letters, pending invoices. */
  callUnknownOutcomes: Gauge<'tenant'>;
  deadLetters: Gauge<'tenant' | 'entity'>;
  pendingInvoices: Gauge<'tenant'>;
  /**
   * Webhook events by tenant (`(unknown)` for a path naming none of ours) and outcome: refused (401, 413, 415, 400,
   * 429), duplicate (an event already kept), then the worker's settled, unmatched or unchanged.
   */
  webhookEvents: OutcomeCounter<'tenant' | 'outcome'>;
  /** Connect-link callbacks by tenant and outcome: connected, refused (the platform's or our reason), picking. */
  connectOutcomes: Counter<'tenant' | 'outcome'>;
  /**
   * Set at scrape time: 1 for each OAuth tenant's connection state (connected, awaiting_connection, needs_reconnect,
   * refresh_token_ageing), 0 for the others.
   */
  connections: Gauge<'tenant' | 'state'>;
  /** Where the connection-state gauge reads the states at scrape time (the composition root sets it). */
  watchConnections(read: () => Promise<readonly ConnectionSample[]>): void;
  /** Run-webhook delivery attempts by tenant, event type and outcome: delivered, retried (failed, retried later), failed (the last). */
  notifyDeliveries: OutcomeCounter<'tenant' | 'type' | 'outcome'>;
  /** How long run-webhook delivery attempts took, by event type. */
  notifyDeliverySeconds: Histogram<'type'>;
  /** BullMQ workers this process replaced because they had stopped taking jobs (decision 46), by queue and reason. */
  workerReplacements: Counter<'queue' | 'reason'>;
  /**
   * Control API requests (src/api) by key name (`(none)` before authentication, never a key itself), route template
   * (`/v1/tenants/{tenantId}/runs`; `(other)` for a path of none) and status.
   */
  apiRequests: Counter<'key' | 'route' | 'status'>;
  /**
   * Whether the per-tenant families carry each tenant's id, or one series for all (`tenant="*"`): the composition
   * root sets it from METRICS_TENANT_LABELS and the number of tenants (decision 0273). Default: per tenant.
   */
  tenantLabelsWhen(perTenant: () => boolean): void;
  /** Whether they do now. */
  perTenant(): boolean;
}

/** The `tenant` label's value of the one series for all tenants when per-tenant series are off. */
export const ALL_TENANTS = '*';

/** One OAuth tenant's connection state, as the connection-state gauge shows it. */
export interface ConnectionSample {
  tenant: string;
  state: 'connected' | 'awaiting_connection' | 'needs_reconnect';
  ageing?: boolean;
}

export const CONNECTION_STATES = ['connected', 'awaiting_connection', 'needs_reconnect', 'refresh_token_ageing'] as const;

/** `deadLettered` → `dead_lettered`; words already in snake_case or lower case stay as they are. */
export function snakeCase(word: string): string {
  return word.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

const snakeCases = new Map<string, string>();

/** snakeCase of an outcome word, remembered (a handful of words, converted once each). */
function outcomeLabel(word: string): string {
  let out = snakeCases.get(word);
  if (out === undefined) {
    out = snakeCase(word);
    if (snakeCases.size < 1000) snakeCases.set(word, out);
  }
  return out;
}

function outcomeCounter<L extends string>(counter: Counter<L>): OutcomeCounter<L> {
  return { inc: (labels, value) => counter.inc({ ...labels, outcome: outcomeLabel(labels.outcome) }, value) };
}

/**
 * A counter (made here from its configuration) incremented on the hot path (once per record or per request): its
 * increments add up in a Map keyed by the label values and reach prom-client when the counter is read (its `collect`, at every scrape or `get`).
 * prom-client hashes and checks the labels on every `inc`; here that happens once per label set and scrape. A
 * label set seen for the first time goes to prom-client at once (with 0), so bad labels still throw at the call,
 * as do values that are not finite or negative.
 */
function talliedCounter<L extends string>(config: CounterConfiguration<L> & { labelNames: readonly L[] }): Counter<L> {
  const counter = new Counter(config);
  const labelNames = config.labelNames;
  const direct = counter.inc.bind(counter) as (labels: LabelValues<L>, value?: number) => void;
  const reset = counter.reset.bind(counter);
  const pending = new Map<string, { labels: LabelValues<L>; n: number }>();
  const flush = (): void => {
    for (const p of pending.values()) if (p.n > 0) direct(p.labels, p.n);
    pending.clear();
  };
  const inc = (labels?: LabelValues<L> | number, value?: number): void => {
    if (typeof labels !== 'object') {
      direct({}, labels);
      return;
    }
    const n = value ?? 1;
    if (!Number.isFinite(n) || n < 0) {
      direct(labels, n); // prom-client's own error
      return;
    }
    let key = '';
    for (const name of labelNames) {
      const v = String(labels[name] ?? '');
      key += `${v.length}:${v}`;
    }
    const p = pending.get(key);
    if (p) p.n += n;
    else {
      direct(labels, 0);
      pending.set(key, { labels: { ...labels }, n });
    }
  };
  Object.assign(counter, {
    inc,
    collect: flush,
    reset: () => {
      pending.clear();
      reset();
    },
  });
  return counter;
}

/**
 * Rewrites the `tenant` label of `metric`'s writes while per-tenant series are off: to ALL_TENANTS, or (`drop`) the
 * write is left out (a family whose one-for-all value would mislead: the last progress of whichever run).
 */
function tenantScoped<T extends object>(metric: T, perTenant: () => boolean, off: 'all' | 'drop' = 'all'): T {
  const target = metric as Record<string, unknown>;
  for (const name of ['inc', 'set', 'observe', 'remove']) {
    const original = target[name];
    if (typeof original !== 'function') continue;
    const call = (original as (...args: unknown[]) => unknown).bind(metric);
    target[name] = (labels?: unknown, ...rest: unknown[]): unknown => {
      if (typeof labels !== 'object' || labels === null || !('tenant' in labels) || perTenant()) return call(labels, ...rest);
      if (off === 'drop') return undefined;
      return call({ ...labels, tenant: ALL_TENANTS }, ...rest);
    };
  }
  return metric;
}

export function createMetrics(options: { defaultMetrics?: boolean; version?: string } = {}): Metrics {
  let perTenantWhen: () => boolean = () => true;
  const perTenant = (): boolean => perTenantWhen();
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const r = [registry];
  let readConnections: (() => Promise<readonly ConnectionSample[]>) | undefined;
  const connections = new Gauge({
    name: 'collections_sync_connection_state',
    help: "Each OAuth tenant's connection state: 1 for its state (connected, awaiting_connection, needs_reconnect; refresh_token_ageing beside connected), 0 for the others",
    labelNames: ['tenant', 'state'],
    registers: r,
    async collect() {
      if (readConnections === undefined) return;
      const samples = await readConnections().catch(() => undefined);
      if (samples === undefined) return;
      this.reset();
      const isIn = (c: ConnectionSample, state: (typeof CONNECTION_STATES)[number]): boolean => state === c.state || (state === 'refresh_token_ageing' && c.ageing === true);
      if (perTenant()) {
        for (const c of samples) for (const state of CONNECTION_STATES) this.set({ tenant: c.tenant, state }, isIn(c, state) ? 1 : 0);
        return;
      }
      // One series for all: how many tenants are in each state.
      for (const state of CONNECTION_STATES) this.set({ tenant: ALL_TENANTS, state }, samples.filter((c) => isIn(c, state)).length);
    },
  });
  new Gauge({
    name: 'collections_sync_build_info',
    help: 'Always 1; the labels say which version of collections-sync runs on which Node.js',
    labelNames: ['version', 'node'],
    registers: r,
  }).set({ version: options.version ?? packageVersion(), node: process.version }, 1);
  const metrics: Metrics = {
    registry,
    tenantLabelsWhen(when) {
      perTenantWhen = when;
    },
    perTenant,
    workerReplacements: new Counter({
      name: 'collections_sync_worker_replacements_total',
      help: 'BullMQ workers replaced in-process because jobs waited while they took none, by queue and reason',
      labelNames: ['queue', 'reason'],
      registers: r,
    }),
    jobs: outcomeCounter(new Counter({ name: 'collections_sync_jobs_total', help: 'Jobs ended, by queue and outcome', labelNames: ['queue', 'outcome'], registers: r })),
    runs: outcomeCounter(new Counter({ name: 'collections_sync_runs_total', help: 'Sync runs ended, by tenant and outcome', labelNames: ['tenant', 'outcome'], registers: r })),
    runSeconds: new Histogram({
      name: 'collections_sync_run_duration_seconds',
      help: 'Duration of sync runs',
      labelNames: ['tenant'],
      buckets: [1, 5, 15, 60, 300, 900, 3600, 14400],
      registers: r,
    }),
    runStalls: new Counter({
      name: 'collections_sync_run_stalls_total',
      help: 'Sync run attempts ended by the stall watchdog (no progress within RUN_STALL_S), by tenant',
      labelNames: ['tenant'],
      registers: r,
    }),
    runProgressTimestamp: new Gauge({
      name: 'collections_sync_run_progress_timestamp_seconds',
      help: "When the tenant's running run last made progress (a record decided, a request answered, a page read), Unix time in seconds; no series while none runs in this process",
      labelNames: ['tenant'],
      registers: r,
    }),
    records: outcomeCounter(
      talliedCounter({
        name: 'collections_sync_records_total',
        help: 'Records by tenant, entity and outcome (created, updated, skipped, dead_lettered, adopted, pending, unlinked, bad_records, fields_dropped, resolved: a dead letter ended)',
        labelNames: ['tenant', 'entity', 'outcome'] as const,
        registers: r,
      }),
    ),
    httpRequests: talliedCounter({
      name: 'collections_sync_service_requests_total',
      help: 'Requests to the collections service by route (path template), method and status',
      labelNames: ['route', 'method', 'status'] as const,
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
      help: 'Now minus the updatedAt of the newest record synced, per tenant and entity: the age of the newest data, not how far behind the sync is (see collections_sync_last_success_timestamp_seconds); negative: a cursor in the future',
      labelNames: ['tenant', 'entity'],
      registers: r,
    }),
    lastSuccessTimestamp: new Gauge({
      name: 'collections_sync_last_success_timestamp_seconds',
      help: "End of the tenant's last run that read every entity to its end (outcome succeeded or partial), Unix time in seconds; no series before the first",
      labelNames: ['tenant'],
      registers: r,
    }),
    callRequests: outcomeCounter(
      new Counter({
        name: 'collections_sync_call_requests_total',
        help: 'Call requests by tenant and outcome (sent, unknown, failed, not_sent, skipped, cancelled)',
        labelNames: ['tenant', 'outcome'],
        registers: r,
      }),
    ),
    callNumbersPlaced: new Counter({ name: 'collections_sync_call_numbers_placed_total', help: 'Numbers in call requests the service accepted', labelNames: ['tenant'], registers: r }),
    callUnknownOutcomes: new Gauge({
      name: 'collections_sync_call_unknown_outcomes',
      help: 'Numbers called with an unknown outcome, waiting for an operator to confirm or release them',
      labelNames: ['tenant'],
      registers: r,
    }),
    deadLetters: new Gauge({ name: 'collections_sync_dead_letters', help: 'Dead letters by tenant and entity', labelNames: ['tenant', 'entity'], registers: r }),
    pendingInvoices: new Gauge({ name: 'collections_sync_pending_invoices', help: 'Invoices waiting for their contact, by tenant', labelNames: ['tenant'], registers: r }),
    connectOutcomes: new Counter({ name: 'collections_sync_connect_callbacks_total', help: 'Connect-link callbacks by tenant and outcome (connected, refused, picking)', labelNames: ['tenant', 'outcome'], registers: r }),
    connections,
    watchConnections(read) {
      readConnections = read;
    },
    apiRequests: new Counter({
      name: 'collections_sync_api_requests_total',
      help: 'Control API requests by key name ((none) before authentication), route template and status',
      labelNames: ['key', 'route', 'status'],
      registers: r,
    }),
    notifyDeliveries: outcomeCounter(
      new Counter({
        name: 'collections_sync_notify_deliveries_total',
        help: 'Run-webhook delivery attempts by tenant, event type and outcome (delivered, retried, failed: the last attempt failed)',
        labelNames: ['tenant', 'type', 'outcome'],
        registers: r,
      }),
    ),
    notifyDeliverySeconds: new Histogram({
      name: 'collections_sync_notify_delivery_duration_seconds',
      help: 'Duration of run-webhook delivery attempts, by event type',
      labelNames: ['type'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: r,
    }),
    webhookEvents: outcomeCounter(
      new Counter({
        name: 'collections_sync_webhook_events_total',
        help: 'Webhook events by tenant and outcome (refused, duplicate, settled, unmatched, unchanged)',
        labelNames: ['tenant', 'outcome'],
        registers: r,
      }),
    ),
  };
  for (const family of [
    metrics.runs,
    metrics.runSeconds,
    metrics.runStalls,
    metrics.records,
    metrics.lastSuccessTimestamp,
    metrics.callRequests,
    metrics.callNumbersPlaced,
    metrics.callUnknownOutcomes,
    metrics.deadLetters,
    metrics.pendingInvoices,
    metrics.webhookEvents,
    metrics.connectOutcomes,
    metrics.notifyDeliveries,
  ]) tenantScoped(family, perTenant);
  tenantScoped(metrics.runProgressTimestamp, perTenant, 'drop');
  tenantScoped(metrics.cursorLagSeconds, perTenant, 'drop');
  return metrics;
}
