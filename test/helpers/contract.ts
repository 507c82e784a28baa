/**
 * The outside job contract as an outside producer gets it: `collections-sync jobs contract` run as a child
 * process (the CLI as shipped, through tsx), its stdout parsed when `--json`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { JobContract } from '../../src/queues/contract.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `collections-sync jobs contract [args]` with `env` over the test process's environment. */
export function runContract(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'jobs', 'contract', ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The printed `--json` contract for a KEY_PREFIX. */
export async function printedContract(keyPrefix: string): Promise<JobContract> {
  const r = await runContract(['--json'], { KEY_PREFIX: keyPrefix });
  if (r.code !== 0) throw new Error(`jobs contract --json exited ${String(r.code)}: ${r.stderr}`);
  return JSON.parse(r.stdout) as JobContract;
}
