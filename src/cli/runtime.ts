/**
 * What a CLI command needs: the validated environment, the tenants file and an App built for the role.
 * Errors here are the user's (bad config, unreachable Redis, unknown tenant) and are printed plainly.
 *
 * This module is loaded for every command, `--help` included: it imports types only, and the app, the
 * configuration and the logger when a command opens a runtime (issue 14: the CLI starts fast).
 */
import { access } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { App } from '../app.js';
import type { Env } from '../config/env.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Metrics } from '../ops/metrics.js';
import type { StateApp } from '../app-state.js';

export class UsageError extends Error {
  readonly exitCode = 2;
}

export interface Runtime {
  env: Env;
  app: App;
  close(): Promise<void>;
}

export async function openRuntime(role: 'worker' | 'producer', options: { metrics?: Metrics; tenantsFile?: string; signal?: AbortSignal } = {}): Promise<Runtime> {
  const [{ createApp }, { loadEnv, ConfigError }, { loadTenants }, { createLogger }] = await Promise.all([
    import('../app.js'),
    import('../config/env.js'),
    import('../config/tenants.js'),
    import('../logger.js'),
  ]);
  const env = loadEnv();
  const tenantsFile = options.tenantsFile ?? env.TENANTS_FILE;
  await tenantsFileExists(tenantsFile, options.tenantsFile === undefined, ConfigError);
  const tenants = await loadTenants(tenantsFile);
  const logger = createLogger({ level: role === 'producer' && env.LOG_LEVEL === 'info' ? 'warn' : env.LOG_LEVEL, format: env.LOG_FORMAT });
  const app = await createApp({ env, tenants, logger, role, ...(options.metrics ? { metrics: options.metrics } : {}), ...(options.signal ? { signal: options.signal } : {}) });
  return { env, app, close: () => app.close() };
}

/**
 * What a read-only command needs and no more (issue 14: `status` starts fast): the environment, the tenants and
 * the state stores on one Redis connection (src/app-state.ts), never the App.
 */
export async function openStateRuntime(): Promise<{ env: Env; app: StateApp }> {
  const [{ openStateApp }, { loadEnv, ConfigError }, { loadTenants }] = await Promise.all([
    import('../app-state.js'),
    import('../config/env.js'),
    import('../config/tenants.js'),
  ]);
  const env = loadEnv();
  await tenantsFileExists(env.TENANTS_FILE, true, ConfigError);
  return { env, app: await openStateApp({ env, tenants: await loadTenants(env.TENANTS_FILE) }) };
}

/**
 * A missing tenants file is the first thing a new user meets (issue 12): say which setting names it, where it
 * was looked for, and what one looks like, not just ENOENT. Other read errors are loadTenants' to report.
 */
async function tenantsFileExists(path: string, fromEnv: boolean, Err: new (message: string) => Error): Promise<void> {
  try {
    await access(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return;
    const where = isAbsolute(path) ? path : `${path} (in ${process.cwd()})`;
    throw new Err(
      [
        `no tenants file at ${where}${fromEnv ? `; TENANTS_FILE ${process.env['TENANTS_FILE'] ? 'names it' : 'is not set and defaults to ./tenants.json'}` : ''}.`,
        'Set TENANTS_FILE to your tenants file, or create one: see "Tenants file" in the README. The smallest one:',
        '  {"tenants":[{"id":"acme","collections":{"clientId":"acme-client","clientSecret":"${ACME_SECRET}"},"platform":{"kind":"file","path":"./data/acme"}}]}',
        'To try it with sample data: collections-sync demo (needs nothing), or follow docs/trying-by-hand.md.',
      ].join('\n'),
    );
  }
}

/** Runs `fn` with a producer runtime and closes it after, whatever happens. */
export async function withRuntime<T>(fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = await openRuntime('producer');
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

export function requireTenant(app: Pick<App | StateApp, 'tenant' | 'tenants'>, id: string): TenantConfig {
  const t = app.tenant(id);
  if (!t) {
    const known = app.tenants().map((x) => x.id).join(', ') || '(none)';
    throw new UsageError(`unknown tenant "${id}"; the tenants file and the store have: ${known}`);
  }
  return t;
}

export function parseDateOption(value: string, flag: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)) || new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value) {
    throw new UsageError(`${flag} must be a date as YYYY-MM-DD (got "${value}")`);
  }
  return value;
}

// C0 controls but tab and newline, DEL, and C1 controls (0x9b is a one-byte CSI on some terminals).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text for a terminal: every control character but tab and newline shown as `\xNN`, so platform data (an id with
 * ESC[2J, a name with a carriage return) reaches the operator as text and never as a terminal command (issue 17).
 * The one escaping function of the CLI's human-readable output: `out` and the error printer use it.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Writes a line for people to stdout (the CLI's output channel; logs go to stderr), control characters escaped. */
export function out(line: string): void {
  process.stdout.write(`${printable(line)}\n`);
}

/** Writes a warning for people to stderr (beside --json output, which stays parseable), control characters escaped. */
export function warn(line: string): void {
  process.stderr.write(`collections-sync: WARNING ${printable(line)}\n`);
}

/**
 * Writes `--json` output: JSON.stringify escapes C0 controls in strings already; DEL and C1 go out as \u escapes
 * too (the same JSON, and safe on a terminal).
 */
export function outJson(value: unknown, indent?: number): void {
  const text = JSON.stringify(value, null, indent).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  process.stdout.write(`${text}\n`);
}

/** Resolves on the first SIGTERM or SIGINT. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: string) => () => resolve(sig);
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });
}
