import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type * as CronParser from 'cron-parser';
import { z } from 'zod';
import { parseJsonBounded } from '../json-bounded.js';
import { durationMs } from './duration.js';
import { ConfigError, envSchema } from './env.js';
import { formatIssues } from './issues.js';
import { moduleOf, PLATFORMS, type PlatformConfig } from '../platforms/registry.js';
import { Secret, secretField } from '../secret.js';
import { isLoopbackHost, secretSafeUrl } from '../urls.js';
import { readVariable } from './secret-files.js';
import { isWebhookSecret, WEBHOOK_SECRET_RULE } from './webhook-secret.js';

/** A tenant id: used in Redis keys and BullMQ job ids, so no colon and not a plain integer. */
export const tenantIdSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ and -, starting with a letter, at most 63');

const secret = secretField;

/**
 * A tenant's `platform` object: the schema of its kind's module (src/platforms/registry.ts lists every platform; each
 * module's config is in its folder).
 */
export const platformSchema = z.discriminatedUnion(
  'kind',
  PLATFORMS.map((m) => m.config) as unknown as [z.ZodType<PlatformConfig, unknown> & { _zod: { propValues: Record<string, Set<unknown>> } }],
);

/** Whether `tz` is a time zone this Node knows (IANA names such as `Asia/Riyadh`, or `UTC`). */
function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * cron-parser (and luxon under it), loaded the first time a tenant's schedule has a cron pattern: most tenants files
 * have none, and `status` starts without them (issue 14: ~20 ms of module loading). A synchronous require, as zod's
 * refinements are synchronous; cron-parser is a CommonJS package.
 */
let cronParserModule: typeof CronParser | undefined;
function cronParser(): typeof CronParser {
  cronParserModule ??= createRequire(import.meta.url)('cron-parser') as typeof CronParser;
  return cronParserModule;
}

/**
 * Why BullMQ could not schedule `cron` in `tz`, or undefined when it can: parsed with cron-parser, the parser BullMQ
 * uses (the same exact version), and asked for its next time, as BullMQ does.
 */
function cronProblem(cron: string, tz: string | undefined): string | undefined {
  try {
    cronParser().CronExpressionParser.parse(cron, { currentDate: new Date(), ...(tz ? { tz } : {}) }).next();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const scheduleSchema = z
  .strictObject({
    /** A fixed interval (`15m`), or */
    every: durationMs.optional(),
    /** a cron pattern (`0 *\/6 * * *`, five fields, or six with seconds first), in `tz` (default UTC). */
    cron: z.string().min(9).optional(),
    tz: z.string().min(1).refine(isTimeZone, 'not a time zone: use an IANA name such as Asia/Riyadh, or UTC').optional(),
    /** The full pass over open invoices (default daily). */
    reconcileEvery: durationMs.prefault('1d'),
  })
  .superRefine((s, ctx) => {
    if (s.every !== undefined && s.cron !== undefined) ctx.addIssue({ code: 'custom', message: 'give `every` or `cron`, not both' });
    if (s.cron === undefined || (s.tz !== undefined && !isTimeZone(s.tz))) return;
    const problem = cronProblem(s.cron, s.tz);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['cron'], message: `not a cron pattern BullMQ can schedule (${problem})` });
  });

const callsSchema = z.strictObject({
  /** Region for local phone numbers (ISO 3166-1 alpha-2), e.g. SA for 05xxxxxxxx. */
  defaultRegion: z.string().regex(/^[A-Z]{2}$/, 'two upper-case letters (ISO 3166-1 alpha-2)').default('SA'),
  aiSettingsTemplateId: z.uuid().nullable().optional(),
  updateExisting: z.boolean().optional(),
  countryCode: z.string().regex(/^[A-Z]{2}$/, 'two upper-case letters').nullable().optional(),
  batchSize: z.number().int().min(10).max(1000).nullable().optional(),
  /** Contacts per bulk-call request. */
  requestSize: z.number().int().min(1).max(1000).default(50),
  /** The secret the service's call webhooks prove themselves with (Bearer, or HMAC-SHA256 of the body); unset: refused. */
  webhookSecret: secret.refine((s) => s.reveal().length >= 16, 'at least 16 characters').optional(),
});

/**
 * Where this tenant's run webhooks go (docs/run-webhooks.md), over RUN_WEBHOOK_URL: the address (https://, or http://
 * to this machine only, as platform addresses) and the signing secret (`whsec_...`, give it as `"${VAR}"`).
 */
const notifySchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).refine((u) => u.startsWith('https://') || isLoopbackHost(new URL(u).hostname), 'must be https:// (http:// only to 127.0.0.0/8, ::1 or localhost)'),
  secret: z
    .string()
    .refine(isWebhookSecret, WEBHOOK_SECRET_RULE)
    .transform((v) => new Secret(v)),
});

/**
 * One tenant: an entry of the tenants file, and the body of `POST /v1/tenants` (src/api), the same schema for both so
 * the file, the API and its document cannot drift apart.
 */
export const tenantSchema = z.strictObject({
  id: tenantIdSchema,
  /** The service's addresses receive the client secret and the token: held to the rule of platform addresses (decision 0175). */
  collections: z.strictObject({
    clientId: z.string().min(1),
    clientSecret: secret,
    baseUrl: secretSafeUrl
      .refine((u) => u.endsWith('/api-service/v1'), 'must end with /api-service/v1')
      .optional(),
    authUrl: secretSafeUrl.optional(),
  }),
  platform: platformSchema,
  // Defaults as the file writes them (`1d`), read as any value is: a schema's document shows a default of its input type.
  schedule: scheduleSchema.prefault({}),
  /** Requests in flight to the service for this tenant (overrides TENANT_INFLIGHT_LIMIT). */
  inFlightLimit: z.number().int().min(1).max(1024).optional(),
  calls: callsSchema.default({ defaultRegion: 'SA', requestSize: 50 }),
  notify: notifySchema.optional(),
});

export const tenantsFileSchema = z.strictObject({ tenants: z.array(tenantSchema) });

/** Duplicate ids, checked on the raw file so they are reported together with every other problem. */
function duplicateIds(raw: unknown): string[] {
  const list = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>)['tenants'] : undefined;
  if (!Array.isArray(list)) return [];
  const seen = new Set<string>();
  const out: string[] = [];
  list.forEach((t: unknown, i) => {
    const id = t !== null && typeof t === 'object' ? (t as Record<string, unknown>)['id'] : undefined;
    if (typeof id !== 'string') return;
    if (seen.has(id)) out.push(`  - tenants[${i}] (${id}).id: duplicate tenant id "${id}"`);
    seen.add(id);
  });
  return out;
}

/**
 * Identities two tenants may not share, checked on the parsed file: one collections client (client id at one auth
 * address) with two secrets, one of which is wrong and goes unnoticed while the other's token works; one platform app
 * (a client id at one token address, as its module names it) with two secrets, for the same reason; and one
 * connection (a Xero organisation, a QuickBooks company...), whose token chain two tenants would restart for each
 * other (docs/decisions/0030).
 */
export function sharedIdentities(file: TenantsFile): string[] {
  const out: string[] = [];
  const clients = new Map<string, { index: number; id: string; secret: Secret }>();
  const apps = new Map<string, { index: number; id: string; secret: Secret }>();
  const owners = new Map<string, { index: number; id: string }>();
  const sameSecret = (map: typeof clients, key: string, i: number, id: string, value: Secret): { index: number; id: string } | undefined => {
    const first = map.get(key);
    if (!first) map.set(key, { index: i, id, secret: value });
    return first && !first.secret.equals(value) ? first : undefined;
  };
  file.tenants.forEach((t, i) => {
    const clientKey = `${t.collections.authUrl ?? '(COLLECTIONS_AUTH_URL)'} ${t.collections.clientId}`;
    const client = sameSecret(clients, clientKey, i, t.id, t.collections.clientSecret);
    if (client) {
      out.push(`  - tenants[${i}] (${t.id}).collections.clientSecret: differs from tenants[${client.index}] (${client.id})'s for the same clientId "${t.collections.clientId}" (one client has one secret; fix the wrong one)`);
    }
    const p = t.platform;
    const ids = moduleOf(p).identities?.(p) ?? {};
    if (ids.app) {
      const app = sameSecret(apps, ids.app.key, i, t.id, ids.app.secret);
      if (app) out.push(`  - tenants[${i}] (${t.id}).platform.clientSecret: differs from tenants[${app.index}] (${app.id})'s for the same ${p.kind} clientId "${ids.app.clientId}" (one app has one secret; fix the wrong one)`);
    }
    // Not named yet: a connect link binds it (and refuses one another tenant has bound: src/connect).
    const c = ids.connection;
    if (c === undefined) return;
    const owner = `${p.kind} ${c.id}`;
    const first = owners.get(owner);
    if (!first) owners.set(owner, { index: i, id: t.id });
    else out.push(`  - tenants[${i}] (${t.id}).platform.${c.field}: the same ${c.what} as tenants[${first.index}] (${first.id}); one tenant per connection (they would share one token chain)`);
  });
  return out;
}

export type TenantConfig = z.infer<typeof tenantSchema>;
export type { PlatformConfig };
export type TenantsFile = z.infer<typeof tenantsFileSchema>;

/**
/**
 * Families of the worker's own variables beyond what the env schema declares: the dashboard's settings (its command
 * reads them), and the Redis and collections families (REDIS_PASSWORD of the compose file, a future
 * COLLECTIONS_* secret).
 */
const RESERVED_FAMILIES = ['REDIS_', 'COLLECTIONS_', 'DASHBOARD_'] as const;

/**
 * Whether `${name}` names one of the worker's own settings, which a tenants file may not read (decision 0119): a
 * tenant's field is sent to that tenant's platform or service, so `${PLATFORM_TOKEN_KEY}` in a tokenUrl'd field
 * would hand the key out. Derived from the env schema (every key it declares, secret or not, and its `_FILE`
 * variant), plus the families above.
 */
export function isReservedVariable(name: string): boolean {
  const base = name.endsWith('_FILE') ? name.slice(0, -'_FILE'.length) : name;
  return Object.hasOwn(envSchema.shape, base) || Object.hasOwn(envSchema.shape, name) || RESERVED_FAMILIES.some((f) => name.startsWith(f));
}

/**
 * Replaces `${VAR}` in every string of the tree (each VAR may come from the file VAR_FILE names: decision 0122);
 * names each missing, unreadable or reserved variable with where it was needed.
 */
interface Missing {
  path: PropertyKey[];
  name: string;
  /** Why it has no value when it is not plainly unset (VAR_FILE unreadable, or VAR and VAR_FILE both set). */
  problem?: string;
  reserved?: true;
}

function substitute(value: unknown, env: NodeJS.ProcessEnv, path: PropertyKey[], missing: Missing[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      if (isReservedVariable(name)) {
        missing.push({ path, name, reserved: true });
        return '';
      }
      const { value: v, problem } = readVariable(env, name);
      if (v === undefined) {
        missing.push({ path, name, ...(problem === undefined ? {} : { problem }) });
        return '';
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, env, [...path, i], missing));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, env, [...path, k], missing)]));
  }
  return value;
}

/** Names a path as `tenants[0] (acme).collections.clientSecret`. */
function describePath(raw: unknown, path: PropertyKey[]): string {
  let out = '';
  let node: unknown = raw;
  for (const key of path) {
    if (typeof key === 'number') {
      out += `[${key}]`;
      node = Array.isArray(node) ? node[key] : undefined;
      const id = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)['id'] : undefined;
      if (typeof id === 'string') out += ` (${id})`;
    } else {
      out += out ? `.${String(key)}` : String(key);
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[String(key)] : undefined;
    }
  }
  return out;
}

/** How deep a tenants file may nest objects and arrays (a real one nests about five deep). */
export const MAX_NESTING = 32;

/** Parses the tenants file's text; every bad key is reported at once, naming the tenant and the field. */
export function parseTenants(text: string, env: NodeJS.ProcessEnv = process.env, source = 'tenants file'): TenantsFile {
  return parseTenantEntries(text, env, source).file;
}

/**
 * As parseTenants, with each entry as written and its `${VAR}`s replaced (what `tenants import` stores: values, as
 * the API takes them).
 */
export function parseTenantEntries(text: string, env: NodeJS.ProcessEnv = process.env, source = 'tenants file'): { file: TenantsFile; entries: Record<string, unknown>[] } {
  const json = parseJsonBounded(text, MAX_NESTING);
  if (!json.ok && json.why === 'too_deep') {
    throw new ConfigError(`${source}: nested deeper than ${MAX_NESTING} levels of objects and arrays (line ${json.line}); a tenants file nests about five deep`);
  }
  if (!json.ok) throw new ConfigError(`${source}: not valid JSON (${json.message})`);
  const raw = json.value;
  const missing: Missing[] = [];
  const substituted = substitute(raw, env, [], missing);
  const parsed = tenantsFileSchema.safeParse(substituted);
  const problems = missing.map((m) =>
    m.reserved
      ? `  - ${describePath(raw, m.path)}: \${${m.name}} names a setting of the worker itself; a tenants file may not read it (use a variable of the tenant's own)`
      : `  - ${describePath(raw, m.path)}: ${m.problem ?? `environment variable ${m.name} is not set`}`,
  );
  const missingAt = new Set(missing.map((m) => m.path.join('.')));
  problems.push(...duplicateIds(raw));
  if (!parsed.success) {
    const rest = parsed.error.issues.filter((i) => !missingAt.has(i.path.join('.')));
    if (rest.length > 0) problems.push(formatIssues(rest, (p) => describePath(raw, p)));
  }
  if (parsed.success) problems.push(...sharedIdentities(parsed.data));
  if (problems.length > 0 || !parsed.success) {
    problems.sort((a, b) => a.localeCompare(b));
    throw new ConfigError(`${source} is invalid:\n${problems.join('\n')}`);
  }
  return { file: parsed.data, entries: (substituted as { tenants: Record<string, unknown>[] }).tenants };
}

/** A problem of one tenant beyond its schema: where (a path in its entry) and what. */
export interface TenantIssue {
  path: (string | number)[];
  message: string;
}

/**
 * What the schema alone cannot say of a tenant added to a running deployment (over the API or `tenants add`): its
 * platform under this deployment's settings, and identities it would share with `others` (the lines the file's load
 * gives, for this tenant only). A file tenant outside the file needs FILE_PLATFORM_ROOT.
 */
export function tenantIssues(t: TenantConfig, others: readonly TenantConfig[], env: { FILE_PLATFORM_ROOT?: string | undefined; PLATFORM_TOKEN_KEY?: string | undefined }): TenantIssue[] {
  const issues: TenantIssue[] = [];
  if (t.platform.kind === 'file' && env.FILE_PLATFORM_ROOT === undefined) {
    issues.push({ path: ['platform', 'path'], message: 'a file tenant outside the tenants file needs FILE_PLATFORM_ROOT (its folder must be under it); add it to the tenants file instead' });
  }
  for (const p of moduleOf(t.platform).check?.(t.platform, env) ?? []) {
    const field = /^([A-Za-z]+): /.exec(p);
    issues.push({ path: ['platform', ...(field?.[1] !== undefined ? [field[1]] : [])], message: field ? p.slice(field[0].length) : p });
  }
  for (const line of sharedIdentities({ tenants: [...others.filter((o) => o.id !== t.id), t] })) {
    // Only what this tenant shares (the others' lines were refused when they were loaded or created).
    if (line.includes(`(${t.id})`)) issues.push({ path: [], message: line.trim().replace(/^- /, '') });
  }
  return issues;
}

/**
 * What the tenants need of the environment, checked at load like every other setting: an OAuth platform's tenant needs
 * PLATFORM_TOKEN_KEY (its form is checked with the environment), and what each platform's module checks against the
 * settings (a file tenant's folder under FILE_PLATFORM_ROOT when it is set). Throws a ConfigError naming each tenant.
 */
export function checkTenantsNeeds(file: TenantsFile, env: { PLATFORM_TOKEN_KEY?: string | undefined; FILE_PLATFORM_ROOT?: string | undefined }): void {
  const checked = new Set(
    file.tenants.flatMap((t, i) => (moduleOf(t.platform).check?.(t.platform, env) ?? []).map((p) => `  - tenants[${i}] (${t.id}).platform.${p}`)),
  );
  if (checked.size > 0) throw new ConfigError(`the tenants file does not fit the settings:\n${[...checked].join('\n')}`);
  if (env.PLATFORM_TOKEN_KEY !== undefined) return;
  const problems = file.tenants.flatMap((t, i) => {
    const m = moduleOf(t.platform);
    return m.oauth === undefined ? [] : [`  - tenants[${i}] (${t.id}).platform: a ${t.platform.kind} tenant needs PLATFORM_TOKEN_KEY in the environment (it encrypts the tenant's ${m.label} tokens at rest; e.g. \`openssl rand -base64 32\`)`];
  });
  if (problems.length > 0) throw new ConfigError(`the tenants file needs a setting that is missing:\n${problems.join('\n')}`);
}

export async function loadTenants(path: string, env: NodeJS.ProcessEnv = process.env): Promise<TenantsFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the tenants file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return parseTenants(text, env, path);
}

/**
 * Where a tenant's run webhooks go and what signs them: its own `notify`, else the fleet's, else none. `guarded`: the
 * URL came with the tenant, so its address is checked when the connection opens (src/notify/address-guard.ts);
 * RUN_WEBHOOK_URL is the operator's own setting and is not.
 */
export function notifyTargetOf(env: { RUN_WEBHOOK_URL?: string | undefined; RUN_WEBHOOK_SECRET?: string | undefined }, tenant: TenantConfig | undefined): { url: string; secret: Secret; guarded: boolean } | undefined {
  // A tenant gone (deleted over the API: its `tenant.deleted`) has the fleet's receiver only.
  if (tenant?.notify) return { ...tenant.notify, guarded: true };
  if (env.RUN_WEBHOOK_URL === undefined || env.RUN_WEBHOOK_SECRET === undefined) return undefined;
  return { url: env.RUN_WEBHOOK_URL, secret: new Secret(env.RUN_WEBHOOK_SECRET), guarded: false };
}

/** The authUrl of a tenant (its own or the environment's). */
export function authUrlOf(env: { COLLECTIONS_AUTH_URL: string }, tenant: TenantConfig): string {
  return tenant.collections.authUrl ?? env.COLLECTIONS_AUTH_URL;
}
