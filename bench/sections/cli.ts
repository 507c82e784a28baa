/**
 * CLI start (issue 14): wall time of the built command line, `node bin/collections-sync.js --help` and `status`
 * (two file tenants after a sync, so it reads real state), against the goal of 150 ms and against a bare
 * `node -e 0` in the same run (Node's own start, which no change of ours can cut). The three run in turn, round
 * after round, so a busy moment of the machine falls on all three; medians are reported. Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeDataSet } from '../data.js';
import { assertSucceeded, deploy, type Bench } from '../harness.js';

export interface CliConfig {
  /** Counted rounds (each runs the three commands once), after one round not counted. */
  runs: number;
  contactsPerTenant: number;
}

export interface CliTiming {
  /** Median wall time, ms. */
  medianMs: number;
  minMs: number;
  maxMs: number;
}

export interface CliResult {
  config: CliConfig;
  goalMs: number;
  node: CliTiming;
  help: CliTiming;
  status: CliTiming;
  /** Median of each round's command ÷ `node -e 0` of the same round. */
  helpPerNode: number;
  statusPerNode: number;
}

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'bin/collections-sync.js');
const GOAL_MS = 150;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const timing = (xs: number[]): CliTiming => ({ medianMs: round(median(xs)), minMs: round(Math.min(...xs)), maxMs: round(Math.max(...xs)) });

/** Wall time from spawn to exit of `node <args>`; output is read and dropped. A failed command fails the section. */
function timed(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve(ms);
      else reject(new Error(`node ${args.join(' ')} exited ${String(code)}: ${stderr.trim()}`));
    });
  });
}

export async function runCliSection(bench: Bench, cfg: CliConfig): Promise<CliResult> {
  try {
    await access(join(REPO, 'dist/src/cli.bundle.js'));
  } catch {
    throw new Error('cli: the built CLI is missing; run `npm run build` first');
  }
  bench.sim.setFaults({ latencyMs: 0, jitterMs: 0, rateLimitPerSecond: null });
  const folder = join(bench.root, 'cli');
  await writeDataSet(folder, { contacts: cfg.contactsPerTenant, seed: 7, idPrefix: 'C' });
  const d = await deploy(bench, 'cli', [{ id: 'cli-a', folder }, { id: 'cli-b', folder }], 1, {});
  try {
    for (const t of ['cli-a', 'cli-b']) assertSucceeded(await d.sync(t), t);
  } finally {
    // The worker stops; the state it wrote stays for `status` to read.
    await d.close();
  }
  // The caller's environment without what tsx or a profiler put there, and the deployment's settings.
  const { NODE_OPTIONS: _options, ...inherited } = process.env;
  const env = { ...inherited, ...d.env, LOG_LEVEL: 'warn' };
  const commands = { node: ['-e', '0'], help: [BIN, '--help'], status: [BIN, 'status'] } as const;
  const times: Record<keyof typeof commands, number[]> = { node: [], help: [], status: [] };
  for (let i = 0; i <= cfg.runs; i += 1) {
    const node = await timed([...commands.node], env);
    const help = await timed([...commands.help], env);
    const status = await timed([...commands.status], env);
    if (i === 0) continue; // warm-up: the page cache and the first start of each
    times.node.push(node);
    times.help.push(help);
    times.status.push(status);
  }
  const perNode = (xs: number[]): number => round(median(xs.map((x, i) => x / times.node[i]!)), 2);
  const result: CliResult = {
    config: cfg,
    goalMs: GOAL_MS,
    node: timing(times.node),
    help: timing(times.help),
    status: timing(times.status),
    helpPerNode: perNode(times.help),
    statusPerNode: perNode(times.status),
  };
  bench.log(`  node -e 0 ${result.node.medianMs} ms, --help ${result.help.medianMs} ms (x${result.helpPerNode}), status ${result.status.medianMs} ms (x${result.statusPerNode}); goal <= ${GOAL_MS} ms`);
  return result;
}
