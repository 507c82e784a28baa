/**
 * The command line: a thin shell over library functions (docs/development.md, "Project layout"). Every command of the product hangs off it.
 * Output for people and `--json` goes to stdout; logs go to stderr.
 *
 * Start-up stays light (issue 14): this file and src/cli/commands/ load commander and nothing heavy; each
 * command's action imports what it runs (src/cli/actions/) when it runs, so `--help` loads no Redis, queue or zod.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { registerConnect } from './cli/commands/connect.js';
import { registerDashboard } from './cli/commands/dashboard.js';
import { registerDemo } from './cli/commands/demo.js';
import { registerApi } from './cli/commands/api.js';
import { registerCalls } from './cli/commands/calls.js';
import { registerInspect } from './cli/commands/inspect.js';
import { registerJobs } from './cli/commands/jobs.js';
import { registerMigrateKeys } from './cli/commands/migrate-keys.js';
import { registerServe } from './cli/commands/serve.js';
import { registerSync } from './cli/commands/sync.js';
import { registerTenants } from './cli/commands/tenants.js';
import { commandLineProblem, finishHelp, oneLineErrors } from './cli/help.js';
import { printable, UsageError } from './cli/runtime.js';

/** The package's version: package.json is one folder up from src/cli.ts, two from dist/src/cli.js. */
function packageVersion(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'collections-sync' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not this one
    }
  }
  return 'unknown';
}

export function buildProgram(): Command {
  const program = new Command('collections-sync')
    .description('Keeps a collections service in step with accounting platforms, and places AI collection calls.')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerServe(program);
  registerSync(program);
  registerInspect(program);
  registerCalls(program);
  registerDemo(program);
  registerDashboard(program);
  registerMigrateKeys(program);
  registerConnect(program);
  registerJobs(program);
  registerApi(program);
  registerTenants(program);
  finishHelp(program);
  oneLineErrors(program);
  return program;
}

let guarded = false;
/** `collections-sync status | head`: a closed pipe is the reader's choice, not an error. */
function guardStdout(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    throw err;
  });
}

/** Runs the CLI and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  guardStdout();
  const program = buildProgram();
  try {
    // An unknown command or a group without its command: one line, exit 2, no help text (issue 28).
    const problem = commandLineProblem(program, argv);
    if (problem !== undefined) throw new UsageError(problem);
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    // --help and --version end with 0; every usage error commander finds (unknown option or command, missing
    // required option or argument, no command) ends with 2, as for the usage errors our actions find.
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`collections-sync: ${printable(message)}\n`);
    if (err instanceof UsageError) return 2;
    // Only loaded when an error gets here (a configuration error comes from it, so it is loaded already then).
    const { ConfigError } = await import('./config/env.js');
    if (err instanceof ConfigError) return 2;
    return 1;
  }
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();
// No top-level await: the status bundle (scripts/bundle-cli.ts) is a CommonJS script.
if (invokedDirectly) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
