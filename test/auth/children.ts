/** Spawning fleet-child.ts processes and reading their JSON lines. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildConfig, ChildSummary } from './fleet-child.js';

const SCRIPT = fileURLToPath(new URL('./fleet-child.ts', import.meta.url));

export interface ChildEvent {
  event: string;
  [k: string]: unknown;
}

export interface Child {
  readonly proc: ChildProcess;
  readonly events: ChildEvent[];
  /** Resolves with the first event of that name (already seen or to come). */
  next(event: string, timeoutMs?: number): Promise<ChildEvent>;
  /** Resolves with the summary when the process exits 0; rejects with its stderr otherwise. */
  readonly done: Promise<ChildSummary>;
  go(): void;
  kill(): Promise<void>;
}

export function spawnChild(config: ChildConfig): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: { ...process.env, AUTH_CHILD_CONFIG: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: ChildEvent[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        events.push(JSON.parse(line) as ChildEvent);
      } catch {
        stderr += `stdout: ${line}\n`;
      }
      for (const l of [...listeners]) l();
    }
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const done = exited.then((code) => {
    const s = events.find((e) => e.event === 'summary');
    if (code !== 0 || !s) {
      const err = events.find((e) => e.event === 'error');
      throw new Error(`child ${proc.pid} exited ${code}: ${typeof err?.['message'] === 'string' ? err['message'] : ''}\n${stderr}`);
    }
    return s as unknown as ChildSummary;
  });
  done.catch(() => undefined);
  return {
    proc,
    events,
    done,
    next(event, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const e = events.find((x) => x.event === event);
          if (e) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(e);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`child ${proc.pid}: no "${event}" within ${timeoutMs} ms\n${stderr}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    go() {
      proc.stdin.write('go\n');
    },
    async kill() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
