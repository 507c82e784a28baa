import { z } from 'zod';
import { formatIssues } from './issues.js';
import { isTokenKey, parseTokenKey, TOKEN_KEY_RULE } from './token-key.js';
import { parseTrustProxy, type TrustProxy } from './trust-proxy.js';
import { parseApiKeys } from './api-keys.js';
import { parseNetworks } from './networks.js';
import { isWebhookSecret, WEBHOOK_SECRET_RULE } from './webhook-secret.js';
import { parseClusterNodes } from './redis-target.js';
import { readSecretFiles, secret, secretKeys } from './secret-files.js';

export const LOG_FORMATS = ['json', 'json-iso', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Whether `u`'s host is this machine (127.0.0.0/8, ::1, localhost). */
function isLoopbackUrl(u: string): boolean {
  const h = new URL(u).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .default(def ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

/**
 * The environment, in the order of `.env.example`. Every key has a default except the ones
 * that only the worker needs (TENANTS_FILE); commands that need them check with `requireEnv`.
 * Mark each secret with `secret(...)`: it may then come from `<KEY>_FILE` (src/config/secret-files.ts).
 */
export const envSchema = z.object({
  /** Redis for queues and state. */
  REDIS_URL: secret(z.url({ protocol: /^rediss?$/, error: 'expected a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379' }).default('redis://127.0.0.1:6379')),
  /**
   * A Redis Cluster instead: its seed nodes, comma-separated, each `host:port` or a redis:// / rediss:// URL
   * (TLS and user/password from the URLs, else from REDIS_URL). Unset: the single Redis of REDIS_URL.
   */
  REDIS_CLUSTER_NODES: secret(
    z
      .string()
      .superRefine((v, ctx) => {
        const parsed = parseClusterNodes(v);
        if ('error' in parsed) ctx.addIssue({ code: 'custom', message: parsed.error });
      })
      .optional(),
  ),
  /** Prefix of every Redis key this worker writes (queues and state). Keep a `{hash tag}` for Redis Cluster. */
  KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_{}.-]{1,64}$/, 'letters, digits, _ . - { } only (no colon)')
    .default('{cs}'),
  /** The collections service API, ending in /api-service/v1. */
  COLLECTIONS_BASE_URL: z
    .url({ protocol: /^https?$/ })
    .refine((u) => /\/api-service\/v1\/?$/.test(u), 'must end with /api-service/v1')
    .transform((u) => u.replace(/\/$/, ''))
    .default('http://127.0.0.1:4010/api-service/v1'),
  /** The address serving /auth/v1/api-key/auth (no path). */
  COLLECTIONS_AUTH_URL: z
    .url({ protocol: /^https?$/ })
    .transform((u) => u.replace(/\/$/, ''))
    .default('http://127.0.0.1:4010'),
  /** The tenants file (JSON). */
  TENANTS_FILE: z.string().min(1).default('./tenants.json'),
  /**
   * The folder every `file` tenant's `path` must be under (after `..` and symbolic links), checked at load and again
   * when each file is opened. Unset: any folder (as before).
   */
  FILE_PLATFORM_ROOT: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * `json`: pino's JSON lines (epoch-ms `time`, numeric `level`); `json-iso`: the same lines with an ISO-8601 `time`
   * and the level's name; `pretty`: for a terminal (needs the pino-pretty development package; JSON without it).
   */
  LOG_FORMAT: z.enum(LOG_FORMATS, { error: `must be one of ${LOG_FORMATS.join(', ')}` }).default('json'),
  /** Sync jobs (runs) one worker process runs at once. */
  WORKER_CONCURRENCY: int(16, 1, 256),
  /** Requests one sync run keeps in flight to the service; unset = the tenant's in-flight limit (its whole budget). */
  SYNC_CONCURRENCY: z.coerce.number().int().min(1).max(1024).optional(),
  /** Records asked of the platform per page. */
  SYNC_PAGE_SIZE: int(200, 1, 1000),
  /** How long an invoice waits for its contact's id-map entry before it is dead-lettered. */
  PENDING_MAX_WAIT_S: int(3600, 0, 86_400 * 30),
  /** Requests in flight to the service per tenant, across all processes. */
  TENANT_INFLIGHT_LIMIT: int(32, 1, 1024),
  HTTP_CONNECT_TIMEOUT_MS: int(5_000, 100, 120_000),
  HTTP_HEADERS_TIMEOUT_MS: int(15_000, 100, 120_000),
  HTTP_BODY_TIMEOUT_MS: int(15_000, 100, 120_000),
  /** Total time for one request, including retries of the transient class. */
  HTTP_REQUEST_TIMEOUT_MS: int(20_000, 100, 300_000),
  HTTP_RETRIES: int(4, 0, 10),
  /** Token lifetime when the token has no `exp` claim. */
  TOKEN_LIFETIME_S: int(300, 1, 86_400 * 7),
  /** Rotate this fraction of the token's own lifetime (from its `exp`) before expiry. */
  TOKEN_REFRESH_MARGIN: z.coerce.number().gt(0).lt(1).default(0.2),
  /**
   * Period of each client's backstop token check (decision 0250): each rotation plans the check of its own token's
   * margin; this catches a planned check lost. One job per client per period: 10,000 clients every 30 s (a tenth of
   * TOKEN_LIFETIME_S, the period before) kept half a core busy.
   */
  TOKEN_CHECK_EVERY_S: int(300, 1, 86_400),
  /**
   * Key of the fingerprints of client secrets kept with a refused secret (HMAC-SHA256; at least 16 characters,
   * the same in every worker). Unset: derived from PLATFORM_TOKEN_KEY, else a random key per process.
   */
  TOKEN_FINGERPRINT_KEY: secret(z.string().min(16, 'must be at least 16 characters').optional()),
  /** Incremental reads start this far before the cursor; content hashes make the overlap free. */
  CURSOR_LOOKBACK_S: int(300, 0, 86_400 * 7),
  /** Port of /healthz, /readyz and /metrics (0 = off). */
  OPS_PORT: int(9464, 0, 65_535),
  /**
   * Whether /metrics has a series per tenant (`tenant="acme"`) or one for all (`tenant="*"`: sums, the oldest last
   * success). `auto`: per tenant while the deployment has at most 1,000 tenants, one for all beyond (10,000 tenants
   * made a 19 MB scrape that held the event loop 2.4 s and ~5 KB of a worker's memory a tenant; decision 0273).
   */
  METRICS_TENANT_LABELS: z.enum(['auto', 'on', 'off']).default('auto'),
  SHUTDOWN_TIMEOUT_MS: int(25_000, 1_000, 600_000),
  /** While Redis is unreachable, how often the log says it still is (the outage's start and end are logged once). */
  REDIS_DOWN_LOG_EVERY_S: int(300, 1, 86_400),
  /** How long a job (and a tenant's run lock) stays owned by a worker that stopped answering (crash, kill -9). */
  JOB_LOCK_MS: int(30_000, 1_000, 600_000),
  /**
   * A BullMQ worker with a free slot that takes no job for this long while jobs of its queue wait (or are due) is
   * wedged: it is closed and replaced in-process (decision 46).
   */
  WORKER_WEDGE_S: int(60, 5, 3_600),
  /** Dead letters whose last attempt is older than this many days are dropped (0 = kept until pushed or cleared). */
  DEAD_LETTER_MAX_AGE_DAYS: int(90, 0, 3650),
  /**
   * A running sync run that makes no progress (no record decided, no request answered, no page read) for this long
   * is stalled: its attempt ends with an error saying where it waits, and the job is retried from its checkpoint.
   */
  RUN_STALL_S: int(300, 1, 86_400),
  /** Runs kept per tenant in the run history (`status` shows the last ones); starting a run drops the oldest beyond it. */
  RUNS_KEPT: int(50, 1, 100_000),
  /**
   * Of those, the newest this many keep every detail (errors, unlinked payments, progress); older ones are cut to a
   * compact line (mode, times, outcome, counts, the first error), so a tenant's history is bounded in bytes (issue 40).
   */
  RUNS_DETAILED: int(5, 1, 100_000),
  /** Runs that started longer ago than this many days are dropped from the history (0 = kept up to RUNS_KEPT). */
  RUNS_MAX_AGE_DAYS: int(30, 0, 3650),
  /**
   * How often a worker looks for tenants created, changed or removed over the API (one Redis read when none were):
   * a change reaches every worker of the fleet, schedules included, within this and the time to put them in place.
   */
  TENANT_STORE_POLL_MS: int(1_000, 50, 60_000),
  /** A tenant removed from the store keeps its state (cursors, id maps, dead letters, runs) this many days, then housekeeping purges it; 0 keeps it for good. */
  TENANT_STATE_RETENTION_DAYS: int(30, 0, 3650),
  /**
   * A tenant that ran nothing for this many seconds holds no client, adapter or token provider in the worker (they
   * are made again at its next run): what an idle tenant costs is its config and its schedules (issue 40).
   */
  TENANT_IDLE_S: int(600, 1, 86_400),
  /** Entries kept in each queue's BullMQ event stream (the fleet's, not per tenant; BullMQ's default is 10,000). */
  QUEUE_EVENTS_KEPT: int(1_000, 100, 1_000_000),
  /** A call campaign's keys (plan, requests, outcomes) expire this many days after it was created. */
  CAMPAIGN_RETENTION_DAYS: int(90, 1, 3650),
  /** A second call to the same number within this many hours is refused. */
  CALL_COOLDOWN_HOURS: z.coerce.number().min(0).max(24 * 365).default(24),
  /** 32-byte key (base64 or hex) to encrypt platform refresh tokens at rest. Needed for tenants of OAuth platforms. */
  PLATFORM_TOKEN_KEY: secret(z.string().refine(isTokenKey, TOKEN_KEY_RULE).optional()),
  /**
   * The key PLATFORM_TOKEN_KEY replaced, during a rotation (docs/security.md): what it sealed is still read, and
   * sealed again with PLATFORM_TOKEN_KEY at its next use. Unset once `connect status` shows nothing under it.
   */
  PLATFORM_TOKEN_KEY_PREVIOUS: secret(z.string().refine(isTokenKey, TOKEN_KEY_RULE).optional()),
  /** Port of the webhook receiver (POST /webhooks/calls/{tenant}); unset = off. Apart from the ops port. */
  WEBHOOK_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  /** Address the webhook receiver binds: every interface, since the service must reach it (each request is authenticated). */
  WEBHOOK_HOST: z.string().min(1).default('0.0.0.0'),
  /** Header carrying the hex HMAC-SHA256 of the raw body under the tenant's `calls.webhookSecret` (else `Authorization: Bearer`). */
  WEBHOOK_SIGNATURE_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name: letters, digits and -')
    .transform((h) => h.toLowerCase())
    .default('x-webhook-signature'),
  /**
   * The public server's outside address (https://, as customers reach it through TLS in front of WEBHOOK_PORT):
   * connect links and the OAuth redirect URI (`PUBLIC_URL/oauth/callback`) are built on it. Unset: no connect links.
   */
  PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .refine((u) => u.startsWith('https://') || isLoopbackUrl(u), 'must be https:// (http:// only to 127.0.0.0/8, ::1 or localhost)')
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  /**
   * Failed connect-link, OAuth-callback and pick checks per client address per minute (per worker process); more
   * failures get 429. A valid link is never refused by this count; one link opens at most this often a minute.
   */
  CONNECT_RATE_PER_MIN: int(30, 1, 100_000),
  /**
   * Whether the public server believes X-Forwarded-For: off (default), the number of proxies in front (1-10), or the
   * proxies' CIDRs (src/config/trust-proxy.ts). Names the client address the connect limit counts by; addresses in
   * the CIDRs are also spared SERVER_MAX_CONNECTIONS_PER_ADDRESS.
   */
  TRUST_PROXY: z
    .string()
    .superRefine((v, ctx) => {
      try {
        parseTrustProxy(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .optional(),
  /**
   * Keys of the control API under /v1 on the public server (WEBHOOK_PORT), comma- or newline-separated entries
   * `<name>:<key>` or `<name>:<key>:<tenant>|<tenant>...` (src/config/api-keys.ts). Unset: the API is off.
   */
  API_KEYS: secret(
    z
      .string()
      .superRefine((v, ctx) => {
        for (const message of parseApiKeys(v).problems) ctx.addIssue({ code: 'custom', message });
      })
      .optional(),
  ),
  /** Control API requests accepted per key per minute (per worker process); more get 429. */
  API_RATE_PER_MIN: int(600, 1, 1_000_000),
  /** Idempotency-Key answers kept (24 h) per API key name, across the fleet; past it the oldest go first. */
  API_IDEMPOTENCY_MAX_PER_KEY: int(10_000, 1, 10_000_000),
  /** How long a session of the operator's console (/console, signed in with an API key) lasts from sign-in, in seconds. */
  CONSOLE_SESSION_S: int(28_800, 60, 2_592_000),
  /** Webhook requests accepted per tenant per minute (per worker process); more get 429. */
  WEBHOOK_RATE_PER_MIN: int(600, 1, 1_000_000),
  /** Webhook events kept per tenant (the oldest go first), for `calls events` and redelivery. */
  WEBHOOK_EVENTS_MAX: int(1000, 1, 1_000_000),
  /** Webhook events older than this many days are dropped (and a redelivery after it counts as new). */
  WEBHOOK_EVENTS_MAX_AGE_DAYS: int(30, 1, 3650),
  /**
   * Bounds of every HTTP server of the worker (webhooks, ops port, dashboard): a request's headers and body must
   * arrive within SERVER_REQUEST_TIMEOUT_MS (a webhook body read stops there too), its headers within
   * SERVER_HEADERS_TIMEOUT_MS (at most the request timeout); at most SERVER_MAX_CONNECTIONS open at once per server,
   * of which SERVER_MAX_CONNECTIONS_PER_ADDRESS from one address.
   */
  SERVER_REQUEST_TIMEOUT_MS: int(10_000, 100, 300_000),
  SERVER_HEADERS_TIMEOUT_MS: int(5_000, 100, 300_000),
  SERVER_MAX_CONNECTIONS: int(1_000, 1, 100_000),
  /**
   * Connections open at once per server from one client address (an IPv6 /64), its excess sockets closed at once: one
   * client cannot take the whole of SERVER_MAX_CONNECTIONS. TRUST_PROXY's CIDRs (proxies carrying many clients) are spared.
   */
  SERVER_MAX_CONNECTIONS_PER_ADDRESS: int(100, 1, 100_000),
  /**
   * Where every tenant without its own `notify.url` gets its run webhooks (`run.finished`, `connection.changed`,
   * docs/run-webhooks.md): https://, or http:// to this machine only. Unset: only tenants with their own get them.
   */
  RUN_WEBHOOK_URL: z
    .url({ protocol: /^https?$/ })
    .refine((u) => u.startsWith('https://') || isLoopbackUrl(u), 'must be https:// (http:// only to 127.0.0.0/8, ::1 or localhost)')
    .optional(),
  /** The signing secret of RUN_WEBHOOK_URL's webhooks: `whsec_` and base64, as Standard Webhooks libraries take it. */
  RUN_WEBHOOK_SECRET: secret(z.string().refine(isWebhookSecret, WEBHOOK_SECRET_RULE).optional()),
  /**
   * The event log (`GET /v1/events`, docs/run-webhooks.md): every run-webhook event is kept this many days, and at
   * most EVENTS_KEEP_MAX of them across the deployment (the oldest go first), so an app whose receiver was down
   * catches up. About 1 KB of Redis each (a run.finished with a few errors): 50,000 is about 50 MB, on one slot.
   */
  EVENTS_KEEP_DAYS: int(30, 1, 3650),
  EVENTS_KEEP_MAX: int(50_000, 100, 10_000_000),
  /** Webhook deliveries one worker process makes at once (the notify queue's own slots: a slow receiver holds only these). */
  NOTIFY_CONCURRENCY: int(8, 1, 256),
  /** One delivery attempt's bound (connect, answer and body); a receiver slower than this is retried. */
  NOTIFY_TIMEOUT_MS: int(10_000, 100, 120_000),
  /** Delivery attempts of one event before it is given up (`failed`). */
  NOTIFY_ATTEMPTS: int(12, 1, 50),
  /** The wait after a failed attempt starts at this and doubles each retry (equal jitter), up to NOTIFY_BACKOFF_MAX_MS. */
  NOTIFY_BACKOFF_MS: int(60_000, 1, 3_600_000),
  NOTIFY_BACKOFF_MAX_MS: int(21_600_000, 1, 86_400_000),
  /**
   * Networks a tenant's own URLs (`notify.url`) may reach although they are not the public internet (loopback,
   * private, link-local, ...: refused otherwise, when the connection opens): CIDRs or addresses separated by commas,
   * e.g. `127.0.0.0/8` for a receiver on this machine, `10.20.0.0/16` for one on premises. Unset: none.
   */
  OUTBOUND_ALLOWED_NETWORKS: z
    .string()
    .superRefine((v, ctx) => {
      for (const message of parseNetworks(v).problems) ctx.addIssue({ code: 'custom', message });
    })
    .optional(),
}).superRefine((env, ctx) => {
  if (env.PLATFORM_TOKEN_KEY_PREVIOUS !== undefined) {
    if (env.PLATFORM_TOKEN_KEY === undefined) {
      ctx.addIssue({ code: 'custom', path: ['PLATFORM_TOKEN_KEY_PREVIOUS'], message: 'is set without PLATFORM_TOKEN_KEY: a rotation reads with the previous key and writes with the new one; set PLATFORM_TOKEN_KEY to the new key' });
    } else if (isTokenKey(env.PLATFORM_TOKEN_KEY) && isTokenKey(env.PLATFORM_TOKEN_KEY_PREVIOUS) && parseTokenKey(env.PLATFORM_TOKEN_KEY).equals(parseTokenKey(env.PLATFORM_TOKEN_KEY_PREVIOUS))) {
      ctx.addIssue({ code: 'custom', path: ['PLATFORM_TOKEN_KEY_PREVIOUS'], message: 'is PLATFORM_TOKEN_KEY itself: give the key it replaced, or unset it' });
    }
  }
  if (env.RUN_WEBHOOK_URL !== undefined && env.RUN_WEBHOOK_SECRET === undefined) {
    ctx.addIssue({ code: 'custom', path: ['RUN_WEBHOOK_URL'], message: 'is set without RUN_WEBHOOK_SECRET: run webhooks are always signed; set RUN_WEBHOOK_SECRET (or RUN_WEBHOOK_SECRET_FILE) too' });
  }
  if (env.NOTIFY_BACKOFF_MAX_MS < env.NOTIFY_BACKOFF_MS) {
    ctx.addIssue({ code: 'custom', path: ['NOTIFY_BACKOFF_MAX_MS'], message: 'must be at least NOTIFY_BACKOFF_MS' });
  }
});

export type Env = z.infer<typeof envSchema>;

/** TRUST_PROXY, parsed (checked at load: this does not throw for an Env loadEnv gave). */
export function trustProxyOf(env: Pick<Env, 'TRUST_PROXY'>): TrustProxy {
  return parseTrustProxy(env.TRUST_PROXY);
}

/** The secret settings, each of which may come from `<KEY>_FILE`. */
export const SECRET_ENV_KEYS: readonly string[] = secretKeys(envSchema.shape);

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * LOG_PRETTY, the switch LOG_FORMAT replaced, is still read: `true` means LOG_FORMAT=pretty. Setting it at all
 * emits a DeprecationWarning (Node's own channel: stderr, silenced by --no-deprecation). Returns a problem, if any.
 */
function readLegacyPretty(source: NodeJS.ProcessEnv, cleaned: Record<string, string>): string | undefined {
  const value = source['LOG_PRETTY'];
  if (value === undefined || value === '') return undefined;
  process.emitWarning('LOG_PRETTY is deprecated: use LOG_FORMAT=pretty (or leave both unset for JSON lines)', { type: 'DeprecationWarning', code: 'CS_LOG_PRETTY' });
  const pretty = bool(false).safeParse(value);
  if (!pretty.success) return '  - LOG_PRETTY: must be true or false (deprecated: use LOG_FORMAT)';
  if (!pretty.data) return undefined;
  const format = cleaned['LOG_FORMAT'];
  if (format !== undefined && format !== 'pretty') return `  - LOG_PRETTY: true contradicts LOG_FORMAT=${format} (drop LOG_PRETTY, it is deprecated)`;
  cleaned['LOG_FORMAT'] = 'pretty';
  return undefined;
}

/** Parses the environment once; every bad key is reported in one message. Empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): Readonly<Env> {
  const files = readSecretFiles(source, SECRET_ENV_KEYS);
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = files.env[key];
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const legacy = readLegacyPretty(source, cleaned);
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success || legacy !== undefined || files.problems.length > 0) {
    // A secret whose file could not be read is reported once, for its file (not again as missing or malformed).
    const issues = parsed.success ? [] : parsed.error.issues.filter((i) => !files.failed.has(String(i.path[0])));
    const lines = [...files.problems, ...(issues.length === 0 ? [] : [formatIssues(issues, (path) => path.join('.'))]), ...(legacy === undefined ? [] : [legacy])];
    throw new ConfigError(`invalid environment:\n${lines.join('\n')}`);
  }
  return Object.freeze(parsed.data);
}
