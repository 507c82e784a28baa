/**
 * What `--help` says beyond commander's defaults (issue 16): required options marked as such, and after each
 * command's options its exit codes and the environment variables it reads. Light on purpose: loaded for --help.
 */
import type { Command } from 'commander';

/** Every key of src/config/env.ts, in its order (test/cli/start.test.ts holds the two lists together). */
export const ENV_KEYS = [
  'REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'COLLECTIONS_BASE_URL', 'COLLECTIONS_AUTH_URL', 'TENANTS_FILE', 'LOG_LEVEL', 'LOG_FORMAT',
  'WORKER_CONCURRENCY', 'SYNC_CONCURRENCY', 'SYNC_PAGE_SIZE', 'PENDING_MAX_WAIT_S', 'TENANT_INFLIGHT_LIMIT',
  'HTTP_CONNECT_TIMEOUT_MS', 'HTTP_HEADERS_TIMEOUT_MS', 'HTTP_BODY_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS', 'HTTP_RETRIES',
  'TOKEN_LIFETIME_S', 'TOKEN_REFRESH_MARGIN', 'TOKEN_FINGERPRINT_KEY', 'CURSOR_LOOKBACK_S', 'OPS_PORT', 'SHUTDOWN_TIMEOUT_MS', 'REDIS_DOWN_LOG_EVERY_S',
  'JOB_LOCK_MS', 'WORKER_WEDGE_S', 'DEAD_LETTER_MAX_AGE_DAYS', 'RUNS_KEPT', 'CAMPAIGN_RETENTION_DAYS', 'CALL_COOLDOWN_HOURS', 'PLATFORM_TOKEN_KEY',
  'WEBHOOK_PORT', 'WEBHOOK_HOST', 'WEBHOOK_SIGNATURE_HEADER', 'WEBHOOK_RATE_PER_MIN', 'WEBHOOK_EVENTS_MAX', 'WEBHOOK_EVENTS_MAX_AGE_DAYS',
] as const;

const DASHBOARD_KEYS = ['DASHBOARD_USER', 'DASHBOARD_PASSWORD', 'DASHBOARD_PORT'];
const PRODUCER = ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'TENANTS_FILE', 'LOG_LEVEL', 'LOG_FORMAT'];
const ALL_CHECKED = 'every other key of .env.example is checked too (README "Configuration")';

const EXIT_CODES = 'Exit codes: 0 success, 1 failure, 2 bad usage or configuration, 3 a partial run or calls with unknown outcomes.';

/** The environment a command reads, by its name (the full path for subcommands); the default is PRODUCER's. */
const ENV_OF: Record<string, string> = {
  worker: `all of .env.example: ${ENV_KEYS.join(', ')}`,
  simulator: 'none',
  demo: 'REDIS_URL (optional: without it the demo starts a private redis-server)',
  dashboard: `${['REDIS_URL', 'REDIS_CLUSTER_NODES', 'KEY_PREFIX', 'LOG_LEVEL', 'LOG_FORMAT', ...DASHBOARD_KEYS].join(', ')}; ${ALL_CHECKED}`,
  'jobs contract': `KEY_PREFIX (no Redis, no tenants file); ${ALL_CHECKED}`,
  'dry-run': `${[...PRODUCER, 'SYNC_PAGE_SIZE', 'CURSOR_LOOKBACK_S', 'PLATFORM_TOKEN_KEY', 'COLLECTIONS_BASE_URL'].join(', ')}; ${ALL_CHECKED}`,
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
