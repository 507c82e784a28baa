/** The short table printed after a run: one line per figure, measured against its ideal. */
import type { Report } from './report.js';
import type { FlakyResult } from './sections/flaky.js';

type Row = [figure: string, measured: string, ideal: string, ratio: string];

const pct = (x: number): string => `${Math.round(x * 100)}%`;
const n = (x: number, d = 0): string => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

export function tableRows(report: Report): Row[] {
  const rows: Row[] = [];
  const { sync, naive, adopt, scaleOut, tokens, memory, fairness, redisBytes, cluster, cli, flaky, shedding, zoho, odoo, tenants, console: pages, soak } = report.sections;
  if (sync) {
    for (const f of sync.firstSync) {
      rows.push([`first sync, c=${f.concurrency}, ${sync.config.latencyMs} ms`, `${n(f.requestsPerS)} req/s (${n(f.recordsPerS)} rec/s)`, `${n(f.idealRequestsPerS)} req/s`, pct(f.fractionOfIdeal)]);
    }
    const u = sync.resync.unchanged;
    rows.push(['resync unchanged: writes', n(u.writes), '0', u.writes === 0 ? 'ideal' : n(u.writes)]);
    rows.push(['resync unchanged: examined', `${n(u.examinedPerS)} rec/s`, `${n(u.rawReadPerS)} rec/s (raw read)`, pct(u.fractionOfRawRead)]);
    const t = sync.resync.tenthChanged;
    rows.push(['resync a tenth changed', `${n(t.writes)} writes / ${n(t.changed)} changed`, '1.00 per changed', n(t.writesPerChanged, 2)]);
    const p = sync.profile;
    rows.push([`per record (c=${sync.config.reference}): worker CPU`, `${n(p.workerCpuMsPerRecord, 2)} ms`, '', '']);
    rows.push(['per record: Redis commands run', `${n(p.redisCommandsPerRecord, 1)} (${n(p.redisScriptCallsPerRecord, 1)} scripts)`, '', '']);
    const top = Object.entries(sync.sources.byKind).slice(0, 4).map(([k, v]) => `${k} ${n(v, 2)}`).join(', ');
    rows.push(['per record: Redis commands sent', `${n(sync.sources.sentPerRecord, 2)} (${top})`, '', '']);
    rows.push(['per record: Redis CPU / simulator CPU', `${n(p.redisCpuMsPerRecord, 2)} / ${n(p.simulatorCpuMsPerRecord, 2)} ms`, '', '']);
    rows.push(['per record: HTTP requests', n(p.httpRequestsPerRecord, 2), '', '']);
  }
  if (naive) {
    const rounds = naive.config.rounds;
    for (const { row: r, ratios } of naive.medians) {
      rows.push([
        `first sync vs naive pusher, c=${naive.config.concurrency}, ${r.latencyMs} ms, ${r.process} process`,
        `${n(r.worker.requestsPerS)} / ${n(r.naive.requestsPerS)} req/s (rec/s x${n(r.recordsRatio, 2)})${rounds > 1 ? `; median of ${rounds} rounds (${ratios.map((x) => n(x, 2)).join(', ')})` : ''}`,
        `>= ${n(r.goal, 1)} (worker / naive)`,
        n(r.ratio, 2),
      ]);
      if (r.latencyMs > 0) {
        rows.push([
          `  requests in flight at the service`,
          `worker ${n(r.worker.meanInFlight, 1)}, naive ${n(r.naive.meanInFlight, 1)} (mean over each run)`,
          `${naive.config.concurrency}`,
          n(r.worker.meanInFlight / r.naive.meanInFlight, 2),
        ]);
      }
    }
  }
  if (adopt) {
    const a = adopt.config;
    rows.push([
      `adoption listing, ${n(a.serviceContacts)} service contacts (${adopt.pages} pages), c=${a.syncConcurrency}, ${a.latencyMs} ms`,
      `${n(adopt.listingMs)} ms (first sync ${n(adopt.seededMs)} ms, ${n(adopt.emptyMs)} ms onto an empty service)`,
      `${n(adopt.idealMs)} ms`,
      pct(adopt.ratio),
    ]);
  }
  if (scaleOut) {
    for (const r of scaleOut.rows) {
      rows.push([`scale-out, ${r.processes} process(es)`, `${n(r.recordsPerS)} rec/s, x${n(r.speedUp, 2)}`, `x${r.idealSpeedUp}`, pct(r.efficiency)]);
    }
  }
  if (tokens) {
    for (const g of tokens.gateCost) {
      rows.push([`requests through the token gate, ${g.latencyMs} ms`, `${n(g.gatePerS)} req/s`, `${n(g.fixedPerS)} req/s (fixed token)`, pct(g.ratio)]);
    }
    const s = tokens.sustained;
    rows.push([`tokens issued, ${tokens.config.lifetimeMs / 1000} s tokens, ${Math.round(s.durationMs / 1000)} s`, `${s.tokensIssued} (${s.failed} failed, ${s.unauthorized} 401s)`, `${s.minimum} (${s.expectedWithMargin} renewed early)`, `x${n(s.issuedPerMinimum, 2)}`]);
  }
  if (memory) {
    rows.push([`peak RSS, ${n(memory.small.records)} records`, `${n(memory.small.peakRssMb)} MB`, '', '']);
    rows.push([`peak RSS, ${n(memory.large.records)} records (x${memory.config.factor})`, `${n(memory.large.peakRssMb)} MB`, `${n(memory.small.peakRssMb)} MB (flat)`, `x${n(memory.peakRatio, 2)}`]);
    rows.push([`live heap after the run, x${memory.config.factor} vs x1`, `${n(memory.large.liveHeapMb, 1)} MB`, `${n(memory.small.liveHeapMb, 1)} MB`, `x${n(memory.liveHeapRatio, 2)}`]);
    rows.push(['CPU-bound first sync (0 ms latency)', `${n(memory.large.recordsPerS)} rec/s, ${n(memory.large.workerCpuMsPerRecord, 2)} ms CPU/rec`, '', '']);
    const [lo, ...hi] = memory.concurrent ?? [];
    for (const c of hi) {
      rows.push([`peak RSS, ${n(c.records)} records in first syncs at once, WORKER_CONCURRENCY ${n(c.workerConcurrency)} vs ${n(lo!.workerConcurrency)}`, `${n(c.peakRssMb)} MB (live heap ${n(c.liveHeapMb, 1)})`, `${n(lo!.peakRssMb)} MB (live heap ${n(lo!.liveHeapMb, 1)})`, `x${n(c.peakRssMb / lo!.peakRssMb, 2)}`]);
    }
  }
  if (fairness) {
    rows.push(['small tenant during a backfill', `${n(fairness.duringBackfillMs)} ms`, `${n(fairness.aloneMs)} ms (alone)`, `x${n(fairness.ratio, 2)}`]);
  }
  if (redisBytes) {
    for (const r of redisBytes.rows) {
      const top = Object.entries(r.byKind).slice(0, 4).map(([k, v]) => `${k} ${n(v.perRecord)}`).join(', ');
      rows.push([`Redis bytes per record, ${n(r.records)} records`, `${n(r.bytesPerRecord)} B (${top})`, '<= 120 B', pct(r.bytesPerRecord / 120)]);
    }
  }
  if (cluster) {
    const f = cluster.firstSync;
    rows.push([`first sync on a 3-master cluster, c=${cluster.config.syncConcurrency}, ${cluster.config.latencyMs} ms`, `${n(f.cluster.recordsPerS)} / ${n(f.single.recordsPerS)} rec/s (cluster / single)`, `>= ${n(f.goal, 1)}`, n(f.ratio, 2)]);
    for (const r of cluster.scaleOut.rows) {
      rows.push([`scale-out on the cluster, ${r.processes} process(es)`, `${n(r.recordsPerS)} rec/s, x${n(r.speedUp, 2)}`, r.processes === 1 ? '' : `>= x${n(cluster.scaleOut.goal, 1)} (ideal x${r.idealSpeedUp})`, pct(r.efficiency)]);
    }
    const s = cluster.scaleOutSingle.rows[cluster.scaleOutSingle.rows.length - 1];
    if (s) rows.push([`the same on the single Redis, ${s.processes} process(es)`, `${n(s.recordsPerS)} rec/s, x${n(s.speedUp, 2)}`, 'cluster / single', n(cluster.scaleOutRatio, 2)]);
  }
  if (cli) {
    for (const [label, t, perNode] of [['--help', cli.help, cli.helpPerNode], ['status', cli.status, cli.statusPerNode]] as const) {
      rows.push([`CLI ${label}, wall, median of ${cli.config.runs}`, `${n(t.medianMs)} ms (x${n(perNode, 2)} node -e 0, ${n(cli.node.medianMs)} ms)`, `<= ${cli.goalMs} ms`, pct(t.medianMs / cli.goalMs)]);
    }
  }
  const faulty = (r: FlakyResult, what: string, label: string): void => {
    const f = r.config;
    const median = (xs: number[]): number => {
      const s = [...xs].sort((a, b) => a - b);
      return ((s[Math.floor((s.length - 1) / 2)] ?? 0) + (s[Math.ceil((s.length - 1) / 2)] ?? 0)) / 2;
    };
    const records = r.rounds[0]?.clean.records ?? 0;
    rows.push([
      `first sync with the worker's start, ${n(records)} records, ${f.latencyMs} ms, ${what}`,
      `${n(median(r.rounds.map((x) => x.flaky.totalMs)))} / ${n(median(r.rounds.map((x) => x.clean.totalMs)))} ms (${label} / clean)${r.rounds.length > 1 ? `; median of ${r.rounds.length} rounds (${r.rounds.map((x) => n(x.ratio, 2)).join(', ')})` : ''}`,
      `<= ${n(r.goal, 1)} (${label} / clean)`,
      n(r.ratio, 2),
    ]);
  };
  if (flaky) faulty(flaky, 'a tenth of requests failing', 'flaky');
  if (shedding) faulty(shedding, '3% of requests answered 429 (Retry-After: 1)', 'shedding');
  if (zoho) {
    const limit = `${n(zoho.perMinute)}/min (100 x ${zoho.config.limitScale})`;
    for (const r of [zoho.first, zoho.incremental]) {
      const what = r.what === 'first' ? `Zoho first sync, ${n(zoho.data.customers)} customers` : `Zoho incremental, ${zoho.config.changedCustomers} customers + ${zoho.config.changedInvoices} invoices changed`;
      rows.push([`${what}: requests to Zoho`, `${n(r.requests.total)} (${n(r.requestsPerRecord, 3)} a record, ${n(r.records)} records; ${r.requests.throttled} 429s)`, `${n(r.minimalRequests)} (minimal)`, `x${n(r.ratioToMinimal, 2)}`]);
      rows.push([`${what}: wall time at ${limit}`, `${n(r.wallMs / 1000, 1)} s`, `${n(r.floorMs / 1000, 1)} s (minimal / limit)`, `x${n(r.wallToFloor, 2)}`]);
    }
  }
  if (odoo) {
    for (const t of odoo.transports) {
      for (const r of [t.first, t.incremental]) {
        const what = r.what === 'first' ? `Odoo ${t.transport} first sync, ${n(odoo.data.customers)} customers` : `Odoo ${t.transport} incremental, ${odoo.config.changedCustomers} customers + ${odoo.config.changedInvoices} invoices changed`;
        rows.push([`${what}: requests to Odoo`, `${n(r.requests)} (${n(r.requestsPerRecord, 3)} a record, ${n(r.records)} records)`, `${n(r.minimalRequests)} (minimal)`, `x${n(r.ratioToMinimal, 2)}`]);
      }
    }
  }
  if (soak) {
    const g = soak.secondHalfGrowthPct;
    rows.push([`soak ${n(soak.config.minutes)} min: steady worker RSS over the second half`, `${n(g.steadyRss, 1)}% (live heap ${n(g.steadyHeap, 1)}%)`, '<= 5%', pct(Math.abs(g.steadyRss) / 5)]);
    rows.push([`soak: Redis used_memory over the second half`, `${n(g.redis, 1)}%`, '<= 5%', pct(Math.abs(g.redis) / 5)]);
    const l = soak.landed;
    rows.push([`soak: ${n(soak.runs.succeeded + soak.runs.other)} runs, ${n(soak.kills)} kill -9s: records in the service`, `${n(l.duplicates)} duplicates, ${n(l.missing)} missing, ${n(l.stale)} stale`, '0', l.duplicates + l.missing + l.stale === 0 ? 'ideal' : 'FAIL']);
  }
  if (tenants) {
    for (const r of tenants.rows) {
      const t = n(r.tenants);
      rows.push([`${t} tenants: ready (schedules in place)`, `${n(r.readyS, 1)} s (${n(r.schedulerWrites)} schedulers written)`, '<= 10 s', pct(r.readyS / 10)]);
      rows.push([`${t} tenants: restart, nothing changed`, `${n(r.restartReadyS, 1)} s, ${n(r.restartSchedulerWrites)} schedulers written`, '0 written', r.restartSchedulerWrites === 0 ? 'ideal' : n(r.restartSchedulerWrites)]);
      rows.push([`${t} tenants: all first syncs done after ready`, `${n(r.firstSyncsS, 1)} s (median wait ${n(r.medianWaitS, 1)} s)`, `<= ${n((150 * r.tenants) / 10_000, 1)} s (150 s at 10,000)`, pct(r.firstSyncsS / ((150 * r.tenants) / 10_000))]);
      rows.push([`${t} tenants: Redis after the first syncs, a tenant`, `${n(r.redisKbPerTenant, 1)} KB (${n((r.redisKbPerTenant * 1000) / 1024, 1)} MB per 1,000)`, '', '']);
      rows.push([`${t} tenants: RSS idle / after syncs / peak`, `${n(r.rssIdleMb)} / ${n(r.rssAfterSyncsMb)} / ${n(r.peakRssMb)} MB`, r.tenants === 10_000 ? '<= 300 MB' : '', r.tenants === 10_000 ? pct(r.rssIdleMb / 300) : '']);
    }
    rows.push(['RSS per further tenant (idle, slope; last two sizes)', `${n(tenants.slopeKbPerTenant, 1)} KB (${n(tenants.lastSlopeKbPerTenant, 1)} KB)`, '<= 15 KB', pct(tenants.slopeKbPerTenant / 15)]);
    const r = tenants.redis;
    rows.push([`one tenant's own keys over ${tenants.config.moreRuns} runs after its ${tenants.config.firstRuns}th`, `+${n(r.ownGrowthKb, 1)} KB (run history ${n(r.runsKb[0], 1)} -> ${n(r.runsKb[1], 1)} KB)`, '<= 16 KB', pct(r.ownGrowthKb / 16)]);
    rows.push([`  the fleet's buffers it fills alone (jobs, event streams and log)`, `+${n(r.fleetGrowthKb, 1)} KB (${n(r.queuesKb[0], 1)} -> ${n(r.queuesKb[1], 1)} KB)`, 'bounded in count fleet-wide', '']);
    for (const f of tenants.fleets ?? []) {
      const t = `${n(f.tenants)} tenants on ${n(f.workers)} workers (${f.site})`;
      const rss = f.perWorker.map((w) => w.rssIdleMb);
      rows.push([`${t}: ready; schedulers written`, `${n(f.readyS, 1)} s; ${n(f.schedulerWrites)} (restart: ${n(f.restartSchedulerWrites)})`, '<= 10 s; 0 at a restart', pct(f.readyS / 10)]);
      rows.push([`${t}: first syncs done after ready`, `${n(f.firstSyncsDone)} in ${n(f.firstSyncsS, 1)} s (median wait ${n(f.medianWaitS, 1)} s)`, '', '']);
      rows.push([`${t}: RSS idle a worker (max); CPU a worker`, `${n(Math.max(...rss))} MB; ${f.perWorker.map((w) => n(w.cpuS)).join(' / ')} s`, '', '']);
    }
  }
  if (pages) {
    for (const p of pages.pages) {
      rows.push([`console: ${p.page} (${n(pages.deadLetters)} dead letters, ${n(pages.tenants)} tenants)`, `median ${n(p.medianMs, 1)} ms, p95 ${n(p.p95Ms, 1)} ms`, `<= ${pages.goalMs} ms (p95)`, p.pass ? 'pass' : 'FAIL']);
    }
  }
  return rows;
}

export function printTable(report: Report): void {
  const rows: Row[] = [['figure', 'measured', 'ideal', 'ratio'], ...tableRows(report)];
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: Row): string => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${line(rows[0]!)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  for (const r of rows.slice(1)) process.stdout.write(`${line(r)}\n`);
}
