import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type * as CronParser from 'cron-parser';
import { z } from 'zod';
import { parseJsonBounded } from '../json-bounded.js';
import { durationMs } from './duration.js';
import { ConfigError, envSchema } from './env.js';
import { isUnder, realPathOf } from './file-root.js';
import { formatIssues } from './issues.js';
import { Secret } from './secret.js';
import { readVariable } from './secret-files.js';
import { isWebhookSecret, WEBHOOK_SECRET_RULE } from './webhook-secret.js';

/** A tenant id: used in Redis keys and BullMQ job ids, so no colon and not a plain integer. */
export const tenantIdSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ and -, starting with a letter, at most 63');

const secret = z.string().min(1, 'must not be empty').transform((v) => new Secret(v));
const httpUrl = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/$/, ''));

/** Whether `hostname` (as URL gives it) is this machine: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * A platform's address (apiUrl, tokenUrl), and a tenant's collections address (baseUrl, authUrl): https://, or http://
 * to this machine only (a test double, a local proxy). Each receives a client secret and tokens, so plain http to
 * another host is refused at load (decisions 0119, 0175).
 */
const platformUrl = httpUrl.refine((u) => u.startsWith('https://') || isLoopbackHost(new URL(u).hostname), 'must be https:// (http:// only to 127.0.0.0/8, ::1 or localhost)');

const filePlatform = z.strictObject({ kind: z.literal('file'), path: z.string().min(1) });
const memoryPlatform = z.strictObject({ kind: z.literal('memory'), name: z.string().min(1).default('default') });
/** Scopes asked for by a connect link (docs/connecting.md): a space-separated list, or a list of strings. */
const scopes = (def: readonly string[]) =>
  z
    .union([z.string().min(1), z.array(z.string().regex(/^\S+$/, 'one scope, no spaces')).min(1)])
    .transform((v) => (typeof v === 'string' ? v.trim().split(/\s+/) : v))
    .default([...def]);

/**
 * Xero's default scopes for a connect link: granular read-only accounting scopes (apps made since 2026-03-02 may not
 * ask for accounting.transactions) and offline_access, which is what yields a refresh token.
 */
export const XERO_DEFAULT_SCOPES = ['offline_access', 'accounting.contacts.read', 'accounting.invoices.read', 'accounting.payments.read'] as const;
export const QUICKBOOKS_DEFAULT_SCOPES = ['com.intuit.quickbooks.accounting'] as const;

const xeroPlatform = z.strictObject({
  kind: z.literal('xero'),
  clientId: z.string().min(1),
  clientSecret: secret,
  /** Optional: without it the tenant waits for a connect link (docs/connecting.md); given, it seeds the token chain. */
  refreshToken: secret.optional(),
  /** The organisation; optional: a connect link binds it (and refuses a grant without it when given). */
  xeroTenantId: z.string().min(1).optional(),
  apiUrl: platformUrl.default('https://api.xero.com/api.xro/2.0'),
  tokenUrl: platformUrl.default('https://identity.xero.com/connect/token'),
  authorizeUrl: platformUrl.default('https://login.xero.com/identity/connect/authorize'),
  /** `GET` lists the organisations of a grant; `DELETE /{id}` disconnects one (connect revoke). */
  connectionsUrl: platformUrl.default('https://api.xero.com/connections'),
  scopes: scopes(XERO_DEFAULT_SCOPES),
});

/** QuickBooks Online's API address for each environment (Intuit's development keys reach only the sandbox). */
export const QUICKBOOKS_API_URLS = {
  production: 'https://quickbooks.api.intuit.com',
  sandbox: 'https://sandbox-quickbooks.api.intuit.com',
} as const;

const quickBooksPlatform = z
  .strictObject({
    kind: z.literal('quickbooks'),
    clientId: z.string().min(1),
    clientSecret: secret,
    /** Optional: without it the tenant waits for a connect link (docs/connecting.md); given, it seeds the token chain. */
    refreshToken: secret.optional(),
    /**
     * The company (Intuit's realm id, a number as text), whose token chain and limits this tenant has. Optional: a
     * connect link binds the company the customer picks (and refuses another one when given).
     */
    realmId: z.string().regex(/^[0-9]{1,32}$/, 'the company id Intuit calls realmId: digits only').optional(),
    environment: z.enum(['production', 'sandbox']),
    /** Without the /v3 path; the default follows `environment`. */
    apiUrl: platformUrl.optional(),
    tokenUrl: platformUrl.default('https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer'),
    authorizeUrl: platformUrl.default('https://appcenter.intuit.com/connect/oauth2'),
    revokeUrl: platformUrl.default('https://developer.api.intuit.com/v2/oauth2/tokens/revoke'),
    scopes: scopes(QUICKBOOKS_DEFAULT_SCOPES),
    /** The app's webhooks verifier token, which signs change notifications (intuit-signature). */
    webhookVerifierToken: secret.optional(),
  })
  .transform(({ apiUrl, ...p }) => ({ ...p, apiUrl: apiUrl ?? QUICKBOOKS_API_URLS[p.environment] }));

export const platformSchema = z.discriminatedUnion('kind', [filePlatform, memoryPlatform, xeroPlatform, quickBooksPlatform]);

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
    reconcileEvery: durationMs.default(86_400_000),
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

export const tenantSchema = z.strictObject({
  id: tenantIdSchema,
  /** The service's addresses receive the client secret and the token: held to the rule of platform addresses (decision 0175). */
  collections: z.strictObject({
    clientId: z.string().min(1),
    clientSecret: secret,
    baseUrl: platformUrl
      .refine((u) => u.endsWith('/api-service/v1'), 'must end with /api-service/v1')
      .optional(),
    authUrl: platformUrl.optional(),
  }),
  platform: platformSchema,
  schedule: scheduleSchema.default({ reconcileEvery: 86_400_000 }),
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
 * (a Xero or QuickBooks client id at one token address) with two secrets, for the same reason; and one Xero
 * organisation or QuickBooks company, whose token chain two tenants would restart for each other (docs/decisions/0030).
 */
function sharedIdentities(file: TenantsFile): string[] {
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
    if (p.kind !== 'xero' && p.kind !== 'quickbooks') return;
    const app = sameSecret(apps, `${p.kind} ${p.tokenUrl} ${p.clientId}`, i, t.id, p.clientSecret);
    if (app) {
      out.push(`  - tenants[${i}] (${t.id}).platform.clientSecret: differs from tenants[${app.index}] (${app.id})'s for the same ${p.kind} clientId "${p.clientId}" (one app has one secret; fix the wrong one)`);
    }
    const connection = p.kind === 'xero' ? p.xeroTenantId : p.realmId;
    // Not named yet: a connect link binds it (and refuses one another tenant has bound: src/connect).
    if (connection === undefined) return;
    const [field, owner, what] =
      p.kind === 'xero' ? ['xeroTenantId', `xero ${connection}`, 'Xero organisation'] : ['realmId', `quickbooks ${connection}`, 'QuickBooks company (realmId)'];
    const first = owners.get(owner);
    if (!first) owners.set(owner, { index: i, id: t.id });
    else out.push(`  - tenants[${i}] (${t.id}).platform.${field}: the same ${what} as tenants[${first.index}] (${first.id}); one tenant per ${p.kind === 'xero' ? 'organisation' : 'company'} (they would share one token chain)`);
  });
  return out;
}

export type TenantConfig = z.infer<typeof tenantSchema>;
export type PlatformConfig = z.infer<typeof platformSchema>;
/** A quickbooks tenant's platform config, defaults filled in (apiUrl per environment, tokenUrl). */
export type QuickBooksTenant = Extract<PlatformConfig, { kind: 'quickbooks' }>;
/** A xero tenant's platform config, defaults filled in. */
export type XeroTenant = Extract<PlatformConfig, { kind: 'xero' }>;
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
  return parsed.data;
}

/**
 * What the tenants need of the environment, checked at load like every other setting: a xero or quickbooks tenant
 * needs PLATFORM_TOKEN_KEY (its form is checked with the environment), and a file tenant's folder must be under
 * FILE_PLATFORM_ROOT when it is set. Throws a ConfigError naming each tenant.
 */
export function checkTenantsNeeds(file: TenantsFile, env: { PLATFORM_TOKEN_KEY?: string | undefined; FILE_PLATFORM_ROOT?: string | undefined }): void {
  checkFileRoot(file, env.FILE_PLATFORM_ROOT);
  if (env.PLATFORM_TOKEN_KEY !== undefined) return;
  const names = { xero: 'Xero', quickbooks: 'QuickBooks' } as const;
  const problems = file.tenants.flatMap((t, i) =>
    t.platform.kind === 'xero' || t.platform.kind === 'quickbooks'
      ? [`  - tenants[${i}] (${t.id}).platform: a ${t.platform.kind} tenant needs PLATFORM_TOKEN_KEY in the environment (it encrypts the tenant's ${names[t.platform.kind]} tokens at rest; e.g. \`openssl rand -base64 32\`)`]
      : [],
  );
  if (problems.length > 0) throw new ConfigError(`the tenants file needs a setting that is missing:\n${problems.join('\n')}`);
}

/** Every file tenant's folder is under `root` (real paths: `..` and symbolic links resolved); unset: any folder. */
function checkFileRoot(file: TenantsFile, root: string | undefined): void {
  if (root === undefined) return;
  if (!existsSync(root)) throw new ConfigError(`FILE_PLATFORM_ROOT=${root} does not exist: make the folder, or set FILE_PLATFORM_ROOT to the one holding the file tenants' folders`);
  const realRoot = realPathOf(root);
  const problems = file.tenants.flatMap((t, i) =>
    t.platform.kind === 'file' && !isUnder(realRoot, realPathOf(t.platform.path))
      ? [`  - tenants[${i}] (${t.id}).platform.path: ${t.platform.path} is outside FILE_PLATFORM_ROOT (${root}), once .. and symbolic links are resolved`]
      : [],
  );
  if (problems.length > 0) throw new ConfigError(`the tenants file names folders outside FILE_PLATFORM_ROOT:\n${problems.join('\n')}`);
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
export function notifyTargetOf(env: { RUN_WEBHOOK_URL?: string | undefined; RUN_WEBHOOK_SECRET?: string | undefined }, tenant: TenantConfig): { url: string; secret: Secret; guarded: boolean } | undefined {
  if (tenant.notify) return { ...tenant.notify, guarded: true };
  if (env.RUN_WEBHOOK_URL === undefined || env.RUN_WEBHOOK_SECRET === undefined) return undefined;
  return { url: env.RUN_WEBHOOK_URL, secret: new Secret(env.RUN_WEBHOOK_SECRET), guarded: false };
}

/** The authUrl of a tenant (its own or the environment's). */
export function authUrlOf(env: { COLLECTIONS_AUTH_URL: string }, tenant: TenantConfig): string {
  return tenant.collections.authUrl ?? env.COLLECTIONS_AUTH_URL;
}
