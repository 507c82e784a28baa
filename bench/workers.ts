/**
 * Worker processes for the benchmark (bench/worker-child.ts, running the built program: bench/shipped.ts; one per
 * `spawnBenchWorker`), with their CPU time and peak RSS read over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { childMessageSchema, type ChildMessage, type ChildStats, type ParentCommand } from './child-protocol.js';
import { WORKER_CHILD } from './shipped.js';

export interface BenchWorker {
  readonly pid: number;
  /** The process's uptime (ms) when its modules were loaded, its app made, it was ready (from its `ready`). */
  readonly timings: { loadedMs: number; appMs: number; readyMs: number } | undefined;
  stats(): Promise<ChildStats>;
  stop(): Promise<void>;
  /** SIGKILL, as `kill -9` (no shutdown); resolves once the process is gone. */
  kill(): Promise<void>;
  output(): string;
}

/** Starts a worker process with `env` on top of the benchmark's environment; resolves once it is ready. */
export async function spawnBenchWorker(env: Record<string, string>, readyTimeoutMs = 60_000): Promise<BenchWorker> {
  // The bundled script (bench/shipped.ts: `bundleWorkerChild` at the bench's start), no tsx loader.
  const child: ChildProcess = fork(WORKER_CHILD, [], {
    // BENCH_CPU_PROF=<dir>: each worker writes a V8 CPU profile there when it stops (to see where the time goes).
    execArgv: ['--expose-gc', ...(process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', '--cpu-prof-dir', process.env['BENCH_CPU_PROF']] : [])],
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  const keep = (d: Buffer): void => void (out = (out + d.toString()).slice(-20_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiters: ((m: ChildMessage) => boolean)[] = [];
  child.on('message', (raw: unknown) => {
    const parsed = childMessageSchema.safeParse(raw);
    if (!parsed.success) return;
    for (let i = 0; i < waiters.length; i += 1) {
      if (waiters[i]?.(parsed.data)) {
        waiters.splice(i, 1);
        return;
      }
    }
  });
  const next = <E extends ChildMessage['event']>(event: E, timeoutMs: number): Promise<Extract<ChildMessage, { event: E }>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${child.pid}: no "${event}" within ${timeoutMs} ms\n${out.slice(-3000)}`)), timeoutMs);
      const onExit = (): void => reject(new Error(`worker ${child.pid} exited before "${event}"\n${out.slice(-3000)}`));
      void exited.then(onExit);
      waiters.push((m) => {
        if (m.event === 'error') {
          clearTimeout(timer);
          reject(new Error(`worker ${child.pid} failed: ${m.message}`));
          return true;
        }
        if (m.event !== event) return false;
        clearTimeout(timer);
        resolve(m as Extract<ChildMessage, { event: E }>);
        return true;
      });
    });
  const command = (c: ParentCommand): void => void child.send(c);

  const ready = await next('ready', readyTimeoutMs);
  const pid = child.pid ?? -1;
  return {
    pid,
    timings: ready.timings,
    output: () => out,
    async stats() {
      const answer = next('stats', 10_000);
      command({ cmd: 'stats' });
      return answer;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      command({ cmd: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** CPU time (ms) between two stats of one process. */
export function cpuMsBetween(a: ChildStats, b: ChildStats): number {
  return (b.cpuUserUs - a.cpuUserUs + (b.cpuSystemUs - a.cpuSystemUs)) / 1000;
}
