/**
 * What `--help` says beyond commander's defaults (issue 16): required options marked as such, and after each
 * command's options its exit codes and the environment variables it reads. Light on purpose: loaded for --help.
 */
import type { Command } from 'commander';

/** Every key of src/config/env.ts, in its order (test/cli/start.test.ts holds the two lists together). */
export const ENV_KEYS = [
  'REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'COLLECTIONS_BASE_URL', 'COLLECTIONS_AUTH_URL', 'TENANTS_FILE', 'FILE_PLATFORM_ROOT', 'LOG_LEVEL', 'LOG_FORMAT',
  'WORKER_CONCURRENCY', 'SYNC_CONCURRENCY', 'SYNC_PAGE_SIZE', 'PENDING_MAX_WAIT_S', 'TENANT_INFLIGHT_LIMIT',
  'HTTP_CONNECT_TIMEOUT_MS', 'HTTP_HEADERS_TIMEOUT_MS', 'HTTP_BODY_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS', 'HTTP_RETRIES',
  'TOKEN_LIFETIME_S', 'TOKEN_REFRESH_MARGIN', 'TOKEN_CHECK_EVERY_S', 'TOKEN_FINGERPRINT_KEY', 'CURSOR_LOOKBACK_S', 'OPS_PORT', 'METRICS_TENANT_LABELS', 'SHUTDOWN_TIMEOUT_MS', 'REDIS_DOWN_LOG_EVERY_S',
  'JOB_LOCK_MS', 'WORKER_WEDGE_S', 'DEAD_LETTER_MAX_AGE_DAYS', 'RUN_STALL_S', 'RUNS_KEPT', 'RUNS_DETAILED', 'RUNS_MAX_AGE_DAYS', 'TENANT_STORE_POLL_MS', 'TENANT_STATE_RETENTION_DAYS', 'TENANT_IDLE_S', 'QUEUE_EVENTS_KEPT', 'CAMPAIGN_RETENTION_DAYS', 'CALL_COOLDOWN_HOURS', 'PLATFORM_TOKEN_KEY', 'PLATFORM_TOKEN_KEY_PREVIOUS',
  'WEBHOOK_PORT', 'WEBHOOK_HOST', 'WEBHOOK_SIGNATURE_HEADER', 'PUBLIC_URL', 'CONNECT_RATE_PER_MIN', 'TRUST_PROXY', 'API_KEYS', 'API_RATE_PER_MIN', 'API_IDEMPOTENCY_MAX_PER_KEY', 'CONSOLE_SESSION_S', 'WEBHOOK_RATE_PER_MIN', 'WEBHOOK_EVENTS_MAX', 'WEBHOOK_EVENTS_MAX_AGE_DAYS',
  'SERVER_REQUEST_TIMEOUT_MS', 'SERVER_HEADERS_TIMEOUT_MS', 'SERVER_MAX_CONNECTIONS', 'SERVER_MAX_CONNECTIONS_PER_ADDRESS',
  'RUN_WEBHOOK_URL', 'RUN_WEBHOOK_SECRET', 'EVENTS_KEEP_DAYS', 'EVENTS_KEEP_MAX', 'NOTIFY_CONCURRENCY', 'NOTIFY_TIMEOUT_MS', 'NOTIFY_ATTEMPTS', 'NOTIFY_BACKOFF_MS', 'NOTIFY_BACKOFF_MAX_MS',
  'OUTBOUND_ALLOWED_NETWORKS',
] as const;

const DASHBOARD_KEYS = ['DASHBOARD_USER', 'DASHBOARD_PASSWORD', 'DASHBOARD_PORT'];
const PRODUCER = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'TENANTS_FILE', 'LOG_LEVEL', 'LOG_FORMAT'];
const ALL_CHECKED = 'every other key of .env.example is checked too (README "Configuration")';

/** The one list of exit codes (README "The command line"; docs/decisions/0105 and 0107). */
export const EXIT_CODES =
  'Exit codes: 0 success, 1 failure (a run, campaign or job failed; its reason is printed), 2 bad usage or configuration, or a confirmation refused (nothing was done), ' +
  '3 a partial run, calls with unknown or failed outcomes, or dead letters left after a replay, 4 a --wait that ended before its job did (no worker, the worker vanished, --wait-timeout; the job goes on).';

/** The environment a command reads, by its name (the full path for subcommands); the default is PRODUCER's. */
const ENV_OF: Record<string, string> = {
  worker: `all of .env.example: ${ENV_KEYS.join(', ')}`,
  simulator: 'none',
  demo: 'REDIS_URL (optional: without it the demo starts a private redis-server)',
  dashboard: `${['REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'LOG_LEVEL', 'LOG_FORMAT', ...DASHBOARD_KEYS].join(', ')}; ${ALL_CHECKED}`,
  'jobs contract': `KEY_PREFIX (no Redis, no tenants file); ${ALL_CHECKED}`,
  'api openapi': 'none',
  'tenants add': `${[...PRODUCER, 'PLATFORM_TOKEN_KEY', 'FILE_PLATFORM_ROOT', 'and each ${VAR} of the entry'].join(', ')}; ${ALL_CHECKED}`,
  'tenants import': `${[...PRODUCER, 'PLATFORM_TOKEN_KEY', 'FILE_PLATFORM_ROOT', 'and each ${VAR} of the file'].join(', ')}; ${ALL_CHECKED}`,
  'dry-run': `${[...PRODUCER, 'FILE_PLATFORM_ROOT', 'SYNC_PAGE_SIZE', 'CURSOR_LOOKBACK_S', 'PLATFORM_TOKEN_KEY', 'PLATFORM_TOKEN_KEY_PREVIOUS', 'COLLECTIONS_BASE_URL'].join(', ')}; ${ALL_CHECKED}`,
};
const CALLS_ENV = `${[...PRODUCER, 'CALL_COOLDOWN_HOURS'].join(', ')}; ${ALL_CHECKED}`;

function pathOf(cmd: Command): string[] {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names;
}

function* commands(cmd: Command): Generator<Command> {
  yield cmd;
  for (const sub of cmd.commands) yield* commands(sub);
}

export function finishHelp(program: Command): void {
  for (const cmd of commands(program)) {
    for (const opt of cmd.options) {
      if (opt.mandatory && !opt.description.includes('(required)')) opt.description = `${opt.description} (required)`;
    }
    const path = pathOf(cmd);
    if (path.length === 0) {
      cmd.addHelpText('after', `\n${EXIT_CODES}\nEnvironment (see .env.example and README "Configuration"): ${ENV_KEYS.join(', ')}; the dashboard also reads ${DASHBOARD_KEYS.join(', ')}.`);
      continue;
    }
    if (cmd.commands.length > 0) continue; // a group (calls, dead-letters, id-map): its commands say theirs
    const env = ENV_OF[path.join(' ')] ?? (path[0] === 'calls' ? CALLS_ENV : `${PRODUCER.join(', ')}; ${ALL_CHECKED}`);
    cmd.addHelpText('after', `\n${EXIT_CODES}\nEnvironment: ${env}.`);
  }
}

/**
 * Names people try for what a command of ours does (issue 28: `inspect` is no command; `status` is what it means).
 * Only names that are no command; checked against the tree by test/cli/usage.test.ts.
 */
export const MEANT: Record<string, string> = { inspect: 'status', runs: 'status', show: 'status', info: 'status', run: 'sync', replay: 'dead-letters retry' };

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

/** The closest command names of `cmd` to `word`, for a "did you mean" hint. */
function suggest(cmd: Command, word: string): string | undefined {
  const names = cmd.commands.map((c) => c.name());
  if (cmd.parent === null && MEANT[word] !== undefined) return MEANT[word];
  const near = names.map((n) => ({ n, d: distance(word, n) })).filter((x) => x.d <= Math.max(2, Math.floor(x.n.length / 3))).sort((a, b) => a.d - b.d)[0];
  return near?.n;
}

const has = (argv: readonly string[], ...flags: string[]): boolean => argv.some((a) => flags.includes(a));

/**
 * Checks the command words of `argv` before commander parses it, so an unknown command (with or without --help) or a
 * group without its command ends with one line and exit 2, never with a help text (issue 28). Returns the problem,
 * or undefined when commander should go on. Options before the command words take no value (-h, -V).
 */
export function commandLineProblem(program: Command, argv: readonly string[]): string | undefined {
  let cmd = program;
  const path: string[] = [];
  for (const arg of argv) {
    if (arg === '--') break;
    if (arg.startsWith('-')) continue;
    if (cmd.commands.length === 0 || arg === 'help') return undefined; // a command's own arguments; `help <command>`
    const sub = cmd.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    const here = ['collections-sync', ...path].join(' ');
    if (!sub) {
      const meant = suggest(cmd, arg);
      return `unknown command '${[...path, arg].join(' ')}'${meant ? ` (did you mean ${[...path, meant].join(' ')}?)` : ''}; the commands of ${here}: ${cmd.commands.map((c) => c.name()).join(', ')}`;
    }
    cmd = sub;
    path.push(arg);
  }
  if (cmd.commands.length > 0 && !has(argv, '-h', '--help', '-V', '--version')) {
    const here = ['collections-sync', ...path].join(' ');
    return `${path.length === 0 ? 'give a command' : `'${path.join(' ')}' needs a command`}: ${cmd.commands.map((c) => c.name()).join(', ')} (${here} --help says more)`;
  }
  return undefined;
}

/**
 * Commander's own usage errors (unknown option, missing required option or argument) as one line naming the command
 * and where its help is, instead of the help text after the error (issue 28).
 */
export function oneLineErrors(program: Command): void {
  for (const cmd of commands(program)) {
    const here = ['collections-sync', ...pathOf(cmd)].join(' ');
    cmd.configureOutput({
      outputError: (text, write) => {
        const message = text
          .trim()
          .replace(/^error: /, '')
          .replace(/\s*\n\(Did you mean ([^)]*)\?\)/, ' (did you mean $1?)')
          .replace(/\s*\n\s*/g, ' ');
        write(`${here}: ${message}; see ${here} --help\n`);
      },
    });
  }
}
