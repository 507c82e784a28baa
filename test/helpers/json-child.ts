/**
 * A TypeScript script run as a child process that reports JSON lines (`{"event": ...}`) on stdout: spawned
 * with `node --import tsx`, its config in one environment variable; `next(event)` waits for a line, `go()`
 * writes "go" to its stdin, `summary()` is the `summary` event of a clean exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export type ChildEvent = { event: string } & Record<string, unknown>;

export interface JsonChild<S> {
  readonly proc: ChildProcess;
  readonly events: ChildEvent[];
  /** The first event of that name (already seen or to come). */
  next(event: string, timeoutMs?: number): Promise<ChildEvent>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The `summary` event once the process exits 0; rejects with its error event and stderr otherwise. */
  summary(): Promise<S>;
  go(): void;
  stderr(): string;
  kill(): Promise<void>;
}

export function spawnJsonChild<S>(script: string, configVar: string, config: unknown): JsonChild<S> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, [configVar]: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: ChildEvent[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  let err = '';
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
        err += `stdout: ${line}\n`;
      }
      for (const l of [...listeners]) l();
    }
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk: string) => {
    err = (err + chunk).slice(-20_000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    events,
    exited,
    next(event, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const e = events.find((x) => x.event === event);
          if (e) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(e);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`child ${proc.pid}: no "${event}" within ${timeoutMs} ms\n${err}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async summary() {
      const { code } = await exited;
      const s = events.find((e) => e.event === 'summary');
      if (code !== 0 || !s) {
        const e = events.find((x) => x.event === 'error');
        throw new Error(`child ${proc.pid} exited ${String(code)}: ${typeof e?.['message'] === 'string' ? e['message'] : JSON.stringify(e ?? null)}\n${err}`);
      }
      return s as unknown as S;
    },
    go() {
      proc.stdin.write('go\n');
    },
    stderr: () => err,
    async kill() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
