/** Spawning child.ts processes and reading their JSON lines. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { XeroChildConfig, XeroChildSummary } from './child.js';

const SCRIPT = fileURLToPath(new URL('./child.ts', import.meta.url));

export interface XeroChild {
  readonly proc: ChildProcess;
  readonly events: Record<string, unknown>[];
  /** The first event of that name (seen or to come). */
  next(event: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  summary(): Promise<XeroChildSummary>;
  go(): void;
  stderr(): string;
}

export function spawnXeroChild(config: XeroChildConfig): XeroChild {
  const proc = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: { ...process.env, XERO_CHILD_CONFIG: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: Record<string, unknown>[] = [];
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
        events.push(JSON.parse(line) as Record<string, unknown>);
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const next = (event: string, timeoutMs = 30_000): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const e = events.find((x) => x['event'] === event);
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
  return {
    proc,
    events,
    next,
    exited,
    async summary() {
      const { code } = await exited;
      const s = events.find((e) => e['event'] === 'summary');
      if (code !== 0 || !s) throw new Error(`child exited ${String(code)}: ${JSON.stringify(events.find((e) => e['event'] === 'error'))}\n${err}`);
      return s as unknown as XeroChildSummary;
    },
    go() {
      proc.stdin.write('go\n');
    },
    stderr: () => err,
  };
}
