/** The benchmark's JSON report: the machine it ran on and each section's figures. */
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { CliResult } from './sections/cli.js';
import type { ConsoleResult } from './sections/console.js';
import type { ClusterResult } from './sections/cluster.js';
import type { AdoptResult } from './sections/adopt.js';
import type { FairnessResult } from './sections/fairness.js';
import type { FlakyResult } from './sections/flaky.js';
import type { MemoryResult } from './sections/memory.js';
import type { NaiveResult } from './sections/naive.js';
import type { RedisBytesResult } from './sections/redis-bytes.js';
import type { ScaleOutResult } from './sections/scale-out.js';
import type { SyncResult } from './sections/sync.js';
import type { SoakResult } from './sections/soak.js';
import type { TenantsResult } from './sections/tenants.js';
import type { TokenResult } from './sections/tokens.js';
import type { OdooBenchResult } from './sections/odoo.js';
import type { ZohoResult } from './sections/zoho.js';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryTotalGb: number;
  memoryFreeGb: number;
  /** 1-minute load average when the run began: other work on a shared machine shows here. */
  loadAverage1m: number;
  node: string;
  redis: string;
  commit: string;
}

export interface Report {
  mode: 'quick' | 'full';
  startedAt: string;
  durationS?: number;
  machine: Machine;
  sections: {
    sync?: SyncResult;
    naive?: NaiveResult;
    adopt?: AdoptResult;
    scaleOut?: ScaleOutResult;
    tokens?: TokenResult;
    memory?: MemoryResult;
    fairness?: FairnessResult;
    redisBytes?: RedisBytesResult;
    cluster?: ClusterResult;
    cli?: CliResult;
    flaky?: FlakyResult;
    shedding?: FlakyResult;
    zoho?: ZohoResult;
    odoo?: OdooBenchResult;
    tenants?: TenantsResult;
    console?: ConsoleResult;
    soak?: SoakResult;
  };
}

const REPORTS = fileURLToPath(new URL('./reports/', import.meta.url));
const gb = (bytes: number): number => Math.round((bytes / 1024 ** 3) * 10) / 10;

function commandOutput(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 5_000 });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

export async function machine(): Promise<Machine> {
  const redis = /v=(\S+)/.exec(commandOutput('redis-server', ['--version']))?.[1] ?? 'unknown';
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryTotalGb: gb(totalmem()),
    memoryFreeGb: gb(freemem()),
    loadAverage1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    node: process.version,
    redis,
    commit: commandOutput('git', ['rev-parse', '--short', 'HEAD']),
  };
}

/** Writes `<date>-<mode>.json` and, when `latest`, `latest.json` (the committed one). Returns the paths. */
export async function writeReport(report: Report, options: { latest: boolean }): Promise<string[]> {
  await mkdir(REPORTS, { recursive: true });
  const text = `${JSON.stringify(report, null, 2)}\n`;
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const files = [`${REPORTS}${stamp}-${report.mode}.json`];
  if (options.latest) files.push(`${REPORTS}latest.json`);
  for (const f of files) await writeFile(f, text);
  return files;
}
