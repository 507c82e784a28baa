/** The CLI as a child process (from the sources, through tsx), its output gathered, and a wait for a line of it. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliChild {
  done: Promise<CliResult>;
  /** Resolves when stderr has shown this text; rejects if the process exits first. */
  stderrShows(text: string): Promise<void>;
}

/** Runs `collections-sync <args>` with `env` over the process's environment (LOG_LEVEL warn unless given). */
export function runCli(args: string[], env: Record<string, string>): CliChild {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const watchers: { text: string; resolve: () => void }[] = [];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of watchers.filter((x) => stderr.includes(x.text))) w.resolve();
  });
  const done = new Promise<CliResult>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return {
    done,
    stderrShows: (text) =>
      new Promise<void>((resolve, reject) => {
        if (stderr.includes(text)) return resolve();
        watchers.push({ text, resolve });
        void done.then((r) => reject(new Error(`exited ${r.code} without showing "${text}": ${r.stderr}`)));
      }),
  };
}
