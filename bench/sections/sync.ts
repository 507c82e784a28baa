/**
 * First-sync throughput at several SYNC_CONCURRENCY values against the simulator at a fixed latency (ideal:
 * concurrency / latency requests per second); then, on the reference tenant, a full resync with nothing
 * changed (ideal: 0 writes; records examined per second against the adapter's raw read rate) and an
 * incremental resync with a tenth changed (ideal: 1 write per changed record). The reference run also says
 * where the time goes (CPU, Redis commands and HTTP requests per record).
 */
import { join } from 'node:path';
import { ENTITIES } from '../../src/glossary.js';
import { FileAdapter } from '../../src/platforms/file/index.js';
import { writeDataSet, type DataSet } from '../data.js';
import { assertSucceeded, deploy, measure, runMs, type Bench, type Measured } from '../harness.js';
import { monitorCommands } from '../monitor.js';
import type { RunRecord } from '../../src/state/index.js';

export interface SyncConfig {
  latencyMs: number;
  concurrencies: number[];
  /** Contacts per unit of concurrency (so every run lasts about as long at the ideal rate). */
  contactsPerSlot: number;
  /** The concurrency whose tenant is also resynced and profiled. */
  reference: number;
}

export interface FirstSyncResult {
  concurrency: number;
  records: number;
  requests: number;
  runMs: number;
  recordsPerS: number;
  requestsPerS: number;
  idealRequestsPerS: number;
  /** requestsPerS / idealRequestsPerS. */
  fractionOfIdeal: number;
}

export interface Profile {
  records: number;
  workerCpuMsPerRecord: number;
  redisCpuMsPerRecord: number;
  simulatorCpuMsPerRecord: number;
  redisCommandsPerRecord: number;
  /** Script calls (EVALSHA/EVAL) per record: one round trip each. */
  redisScriptCallsPerRecord: number;
  topRedisCommandsPerRecord: Record<string, number>;
  httpRequestsPerRecord: number;
}

export interface ResyncResult {
  unchanged: {
    records: number;
    writes: number;
    runMs: number;
    examinedPerS: number;
    /** The file adapter alone (read + validate, no state, no service), records per second. */
    rawReadPerS: number;
    fractionOfRawRead: number;
    redisCommandsPerRecord: number;
    workerCpuMsPerRecord: number;
  };
  tenthChanged: { changed: number; writes: number; writesPerChanged: number; runMs: number };
}

/** Commands the worker sent to Redis per record of a first sync, by the kind of key (MONITOR; a smaller tenant). */
export interface CommandSourcesPerRecord {
  records: number;
  sentPerRecord: number;
  /** Kind of key -> commands per record (auth = the token gate, ids = id maps, sync = the BullMQ queue, ...). */
  byKind: Record<string, number>;
  /** Kind.command -> commands per record, the largest first. */
  byCommand: Record<string, number>;
  inScriptsPerRecord: number;
}

export interface SyncResult {
  config: SyncConfig;
  firstSync: FirstSyncResult[];
  profile: Profile;
  sources: CommandSourcesPerRecord;
  resync: ResyncResult;
}

const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

export function profileOf(m: Measured<unknown>, records: number): Profile {
  const scripts = (m.redis.byCommand['evalsha'] ?? 0) + (m.redis.byCommand['eval'] ?? 0);
  const top = Object.entries(m.redis.byCommand)
    .slice(0, 8)
    .map(([k, v]) => [k, round(v / records)] as const);
  return {
    records,
    workerCpuMsPerRecord: round(m.workerCpuMs / records),
    redisCpuMsPerRecord: round(m.redis.cpuMs / records),
    simulatorCpuMsPerRecord: round(m.simulatorCpuMs / records),
    redisCommandsPerRecord: round(m.redis.total / records, 2),
    redisScriptCallsPerRecord: round(scripts / records, 2),
    topRedisCommandsPerRecord: Object.fromEntries(top),
    httpRequestsPerRecord: round(m.requests / records),
  };
}

/** Reads every record of a data set through the file adapter (the ceiling of a resync's examine rate). */
async function rawReadPerS(folder: string): Promise<number> {
  const adapter = new FileAdapter({ folder });
  const t0 = performance.now();
  let n = 0;
  for (const entity of ENTITIES) {
    let pageToken: string | undefined;
    do {
      const page = await adapter.readPage(entity, { pageSize: 200, ...(pageToken === undefined ? {} : { pageToken }) });
      n += page.records.length + page.bad.length;
      pageToken = page.nextPageToken;
    } while (pageToken !== undefined);
  }
  return n / ((performance.now() - t0) / 1000);
}

interface FirstSync {
  result: FirstSyncResult;
  m: Measured<RunRecord>;
  data: DataSet;
  close(): Promise<void>;
  run(mode: 'full' | 'incremental'): Promise<Measured<RunRecord>>;
  sources(): Promise<CommandSourcesPerRecord>;
}

async function firstSync(bench: Bench, cfg: SyncConfig, c: number): Promise<FirstSync> {
  const tenant = `sync-c${c}`;
  const folder = join(bench.root, tenant);
  const data = await writeDataSet(folder, { contacts: cfg.contactsPerSlot * c, seed: 100 + c, idPrefix: `T${c}` });
  // A second tenant of a quarter the size, first-synced under MONITOR on request (see `sources`).
  const monTenant = `sync-c${c}-mon`;
  const monFolder = join(bench.root, monTenant);
  const d = await deploy(bench, `sync${c}`, [{ id: tenant, folder }, { id: monTenant, folder: monFolder }], 1, {
    SYNC_CONCURRENCY: String(c),
    TENANT_INFLIGHT_LIMIT: String(Math.max(32, c)),
  });
  const run = async (mode: 'full' | 'incremental'): Promise<Measured<RunRecord>> => {
    const m = await measure(bench, d.workers, () => d.sync(tenant, mode));
    assertSucceeded(m.value, `${tenant} ${mode}`);
    return m;
  };
  const m = await run('full');
  const ms = runMs(m.value);
  const ideal = (c * 1000) / cfg.latencyMs;
  const result: FirstSyncResult = {
    concurrency: c,
    records: data.records,
    requests: m.requests,
    runMs: ms,
    recordsPerS: round(data.records / (ms / 1000), 1),
    requestsPerS: round(m.requests / (ms / 1000), 1),
    idealRequestsPerS: ideal,
    fractionOfIdeal: round(m.requests / (ms / 1000) / ideal),
  };
  bench.log(`  first sync c=${c}: ${data.records} records, ${m.requests} requests in ${ms} ms = ${result.requestsPerS} req/s (${Math.round(result.fractionOfIdeal * 100)}% of ${ideal})`);
  const sources = async (): Promise<CommandSourcesPerRecord> => {
    const monData = await writeDataSet(monFolder, { contacts: Math.max(10, Math.round((cfg.contactsPerSlot * c) / 4)), seed: 200 + c, idPrefix: `M${c}` });
    const mon = await monitorCommands(bench.admin, [bench.admin]);
    assertSucceeded(await d.sync(monTenant, 'full'), monTenant);
    const counted = await mon.stop();
    const per = (n: number): number => round(n / monData.records, 3);
    const byKind: Record<string, number> = {};
    const byCommand: [string, number][] = [];
    for (const [kind, cmds] of Object.entries(counted.sent)) {
      byKind[kind] = per(Object.values(cmds).reduce((a, b) => a + b, 0));
      for (const [cmd, n] of Object.entries(cmds)) byCommand.push([`${kind}.${cmd}`, per(n)]);
    }
    byCommand.sort((a, b) => b[1] - a[1]);
    return {
      records: monData.records,
      sentPerRecord: per(counted.sentTotal),
      byKind: Object.fromEntries(Object.entries(byKind).sort((a, b) => b[1] - a[1])),
      byCommand: Object.fromEntries(byCommand.filter(([, n]) => n >= 0.005)),
      inScriptsPerRecord: per(counted.inScripts),
    };
  };
  return { result, m, data, close: () => d.close(), run, sources };
}

export async function runSyncSection(bench: Bench, cfg: SyncConfig): Promise<SyncResult> {
  bench.sim.setFaults({ latencyMs: cfg.latencyMs, jitterMs: 0, rateLimitPerSecond: null });
  const firstSyncs: FirstSyncResult[] = [];
  let profile: Profile | undefined;
  let resync: ResyncResult | undefined;
  let sources: CommandSourcesPerRecord | undefined;
  for (const c of cfg.concurrencies) {
    const fs = await firstSync(bench, cfg, c);
    firstSyncs.push(fs.result);
    if (c === cfg.reference) {
      profile = profileOf(fs.m, fs.data.records);
      const unchanged = await fs.run('full');
      const raw = await rawReadPerS(fs.data.folder);
      const uMs = runMs(unchanged.value);
      const changedSet = await writeDataSet(fs.data.folder, { contacts: cfg.contactsPerSlot * c, seed: 100 + c, idPrefix: `T${c}` }, { changeTenth: true });
      const tenth = await fs.run('incremental');
      resync = {
        unchanged: {
          records: fs.data.records,
          writes: unchanged.writes,
          runMs: uMs,
          examinedPerS: round(fs.data.records / (uMs / 1000), 1),
          rawReadPerS: round(raw, 1),
          fractionOfRawRead: round(fs.data.records / (uMs / 1000) / raw),
          redisCommandsPerRecord: round(unchanged.redis.total / fs.data.records, 2),
          workerCpuMsPerRecord: round(unchanged.workerCpuMs / fs.data.records),
        },
        tenthChanged: { changed: changedSet.changed, writes: tenth.writes, writesPerChanged: round(tenth.writes / changedSet.changed), runMs: runMs(tenth.value) },
      };
      bench.log(`  resync unchanged: ${unchanged.writes} writes, ${resync.unchanged.examinedPerS} records/s examined (raw read ${resync.unchanged.rawReadPerS}/s)`);
      bench.log(`  resync a tenth changed: ${tenth.writes} writes for ${changedSet.changed} changed records`);
      sources = await fs.sources();
      bench.log(`  Redis commands sent per record (MONITOR): ${sources.sentPerRecord} (${Object.entries(sources.byKind).map(([k, v]) => `${k} ${v}`).join(', ')})`);
    }
    await fs.close();
  }
  if (!profile || !resync || !sources) throw new Error(`the reference concurrency ${cfg.reference} is not among ${cfg.concurrencies.join(', ')}`);
  return { config: cfg, firstSync: firstSyncs, profile, sources, resync };
}
