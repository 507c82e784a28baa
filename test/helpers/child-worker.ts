/**
 * The real worker (`collections-sync worker`) as a child process, for crash tests: kill -9 and restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface ChildWorker {
  readonly process: ChildProcess;
  output(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

export function spawnWorker(env: Record<string, string>): ChildWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'worker'], {
    // CRASH_LOG_LEVEL: the workers' log level (warn), e.g. info to follow a crash test run by run.
    env: { ...process.env, OPS_PORT: '0', LOG_LEVEL: process.env['CRASH_LOG_LEVEL'] ?? 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    process: child,
    output: () => out,
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
