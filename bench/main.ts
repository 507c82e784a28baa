/**
 * `npm run bench [-- --quick] [-- --only sync,tokens,...]`: the benchmark suite. Every figure is a ratio against
 * an ideal measured in the same run (the simulator's latency, one process, a fixed token, the adapter alone),
 * so load from other work on the machine largely cancels. Writes bench/reports/<date>-<mode>.json (and
 * latest.json for --quick) and prints a short table.
 */
// First: zod's OpenAPI extension before any schema is made (at aca8b8d the bench does not start otherwise:
// `tenantEntrySchema.openapi is not a function`, src/config/tenants.ts making its schemas before src/api imports it).
import '@hono/zod-openapi';
import { openBench } from './harness.js';
import { buildProgram, bundleWorkerChild } from './shipped.js';
import { OPT_IN, parseArgs, plan, type SectionName } from './plan.js';
import { machine, writeReport, type Report } from './report.js';
import { printTable } from './table.js';
import { runSyncSection } from './sections/sync.js';
import { runNaiveSection } from './sections/naive.js';
import { runAdoptSection } from './sections/adopt.js';
import { runScaleOutSection } from './sections/scale-out.js';
import { runTokenSection } from './sections/tokens.js';
import { runMemorySection } from './sections/memory.js';
import { runFairnessSection } from './sections/fairness.js';
import { runRedisBytesSection } from './sections/redis-bytes.js';
import { runClusterSection } from './sections/cluster.js';
import { runCliSection } from './sections/cli.js';
import { runFlakySection } from './sections/flaky.js';
import { runOdooSection } from './sections/odoo.js';
import { runZohoSection } from './sections/zoho.js';
import { runTenantsSection, sizesFromEnv } from './sections/tenants.js';
import { runConsoleSection } from './sections/console.js';
import { runSoakSection, soakMinutesFromEnv } from './sections/soak.js';

const log = (line: string): void => void process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const p = plan(args.quick);
  const started = Date.now();
  log(`collections-sync bench (${args.quick ? 'quick' : 'full'}; ${p.expected})`);
  // Workers run the program as built (bench/shipped.ts): built from this checkout first, so no figure is stale.
  log('building the program (npm run build)');
  buildProgram();
  await bundleWorkerChild();
  const bench = await openBench({ quick: args.quick, log });
  const report: Report = { mode: args.quick ? 'quick' : 'full', startedAt: new Date(started).toISOString(), machine: await machine(), sections: {} };
  const want = (s: SectionName): boolean => (args.only === undefined ? !OPT_IN.includes(s) : args.only.includes(s));
  try {
    if (want('sync')) {
      log('sync: first-sync throughput, resyncs, where the time goes');
      report.sections.sync = await runSyncSection(bench, p.sync);
    }
    if (want('naive')) {
      log('naive: the worker against a plain undici loop on the same data (worker / naive)');
      report.sections.naive = await runNaiveSection(bench, p.naive);
    }
    if (want('adopt')) {
      log('adopt: a first sync onto a service that already holds many contacts (the listing read before any push)');
      report.sections.adopt = await runAdoptSection(bench, p.adopt);
    }
    if (want('scaleOut')) {
      log('scale-out: worker processes on one Redis');
      report.sections.scaleOut = await runScaleOutSection(bench, p.scaleOut);
    }
    if (want('tokens')) {
      log('tokens: the gate against a fixed token; tokens issued against the minimum');
      report.sections.tokens = await runTokenSection(bench, p.tokens);
    }
    if (want('memory')) {
      log('memory: peak RSS of the worker, a data set and one 50x larger');
      report.sections.memory = await runMemorySection(bench, p.memory);
    }
    if (want('fairness')) {
      log('fairness: a small tenant while a large one backfills');
      report.sections.fairness = await runFairnessSection(bench, p.fairness);
    }
    if (want('redisBytes')) {
      log('redisBytes: Redis memory per synced record (used_memory delta), by key kind');
      report.sections.redisBytes = await runRedisBytesSection(bench, p.redisBytes);
    }
    if (want('cluster')) {
      log('cluster: first sync on a 3-master Redis Cluster against the single Redis; scale-out on the cluster');
      report.sections.cluster = await runClusterSection(bench, p.cluster);
    }
    if (want('cli')) {
      log('cli: wall time of the built CLI, --help and status, against node -e 0 and the 150 ms goal');
      report.sections.cli = await runCliSection(bench, p.cli);
    }
    if (want('flaky')) {
      log('flaky: a first sync, the worker\'s start included, clean and with a tenth of the requests failing (flaky / clean)');
      report.sections.flaky = await runFlakySection(bench, p.flaky);
    }
    if (want('shedding')) {
      log('shedding: a first sync, the worker\'s start included, clean and with 3% of the requests answered 429 (Retry-After: 1) (shedding / clean)');
      report.sections.shedding = await runFlakySection(bench, p.shedding);
    }
    if (want('zoho')) {
      log(`zoho: a 300-customer Zoho Books organisation through the double, first and incremental sync: requests against the minimal, wall time against the limit's floor (${p.zoho.limitScale} x 100/min)`);
      report.sections.zoho = await runZohoSection(bench, p.zoho);
    }
    if (want('odoo')) {
      log(`odoo: a ${p.odoo.customers}-customer Odoo database (company 1 of two) through the double over JSON-RPC (17) and JSON-2 (19), first and incremental sync: requests per record against the minimal`);
      report.sections.odoo = await runOdooSection(bench, p.odoo);
    }
    if (want('tenants')) {
      log(`tenants: ${sizesFromEnv(p.tenants.sizes).join(' / ')} small file tenants on one worker (schedules in place, ${p.tenants.latencyMs} ms): ready, first syncs, RSS, a restart; one tenant's Redis over ${p.tenants.moreRuns} runs`);
      report.sections.tenants = await runTenantsSection(bench, p.tenants);
    }
    if (want('console')) {
      log(`console: the operator's console over HTTP, a tenant with ${p.console.deadLetters} dead letters and ${p.console.others} tenants beside it: each page's median and p95 over ${p.console.requests} GETs against 50 ms`);
      report.sections.console = await runConsoleSection(bench, p.console);
    }
    if (want('soak')) {
      log(`soak: ${p.soak.tenants} tenants, ${p.soak.workers} workers for ${soakMinutesFromEnv(p.soak.minutes)} min (a kill -9 every ${p.soak.killEveryS} s, data changing, faults on): RSS and Redis over the second half, every record once at the end`);
      report.sections.soak = await runSoakSection(bench, p.soak);
    }
  } finally {
    await bench.close();
  }
  report.durationS = Math.round((Date.now() - started) / 1000);
  const files = await writeReport(report, { latest: args.quick && args.only === undefined });
  printTable(report);
  log(`report: ${files.join(', ')} (${report.durationS} s)`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
