/**
 * The control API (issue 31): `/v1` on the public server, JSON only, behind API keys (API_KEYS), a thin shell over
 * the same producers and stores the CLI calls (docs/api.md). Per request, in this order:
 *
 *   no key of ours in `Authorization: Bearer`             the public server's one 401, whatever the path
 *   over API_RATE_PER_MIN for the key                     429 with Retry-After
 *   a POST whose body is not JSON / over 64 KiB           415 / 413
 *   parameters or body not valid                          400 (path, query, header) / 422 (body), with `errors`
 *   a tenant unknown, or not one this key may see         404, the same answer
 *   no such route / another method                        404 / 405 with Allow
 *   Redis or the queue failing                            503
 *
 * Every error is a problem (problem.ts); every answer is logged at info (key name, method, route template, status,
 * ms: never the Authorization header) and counted (`onRequest`). The OpenAPI document is generated from the routes
 * (routes.ts) and their schemas (schemas.ts).
 */
import type { HttpBindings } from '@hono/node-server';
import { OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Queue } from 'bullmq';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { Redis } from 'ioredis';
import type { ApiKey } from '../config/api-keys.js';
import { parseDuration } from '../config/duration.js';
import { tenantIssues, type TenantConfig } from '../config/tenants.js';
import { LinkRefusedError } from '../connect/connect.js';
import { MAX_LINK_MS, type LinkRecord } from '../connect/links.js';
import { connectionStates, type ConnectionReport } from '../connect/status.js';
import { ENTITIES } from '../glossary.js';
import { isJsonType } from '../guards.js';
import { OAUTH_KINDS, oauthOf } from '../platforms/registry.js';
import type { Logger } from '../logger.js';
import { tenantEvent, type EventSink, type NotifyEvent } from '../notify/events.js';
import { JOBS, QUEUES, requestSync, type SyncMode } from '../queues/index.js';
import { DEFAULT_EVERY_MS } from '../queues/schedulers.js';
import { sendAll } from '../redis/batch.js';
import { queuePrefix } from '../redis/keys.js';
import type { RevokeOutcome } from '../connect/revoke.js';
import type { EventLog, LoggedEvent } from '../state/event-log.js';
import { SYNC_TRIGGERS } from '../glossary.js';
import { DeadLetterStore } from '../state/dead-letters.js';
import type { StateStores } from '../state/index.js';
import { purgeTenantState } from '../state/purge.js';
import { publicSettings, settingsTag, type Issue, type JsonObject, type TenantStore } from '../state/tenant-store.js';
import { IDEMPOTENCY_KEY, IdempotencyStore, type Sealer } from './idempotency.js';
import { digestKeys, keyOf, maySee } from './keys.js';
import { MinuteLimiter } from '../http-server.js';
import { ours, plain, problemResponse, type FieldError, type Problem } from './problem.js';
import { ROUTES, templateOf } from './routes.js';
import { requestIdOf } from '../request-id.js';
import type { eventSchema, LastDelivery, runSchema, tenantSchema, TenantState } from './schemas.js';
import { connectionOf, decodeCursor, deadLetterOf, encodeCursor, isoOf, known, runOf, runSummaryOf } from './views.js';
import { registerWebhooks } from './webhooks-doc.js';

export const MAX_API_BODY_BYTES = 64 * 1024;
const RUN_DEAD_LETTERS = 100;

export const DOCUMENT_CONFIG = {
  openapi: '3.1.0',
  info: {
    title: 'collections-sync control API',
    version: '1.0.0',
    description:
      'Drive collections-sync from your app: tenants and their state, runs, dead letters, connect links. Every request but the one of this document carries `Authorization: Bearer <API key>` (API_KEYS). Errors are RFC 9457 problem details; every answer carries a `Request-Id`. Guide: docs/api.md.',
    license: { name: 'UNLICENSED: proprietary, as package.json says', url: 'https://docs.npmjs.com/cli/v10/configuring-npm/package-json#license' },
    contact: { name: 'collections-sync maintainers (the team that runs your workers)' },
  },
  // Where the API is: a worker serves its PUBLIC_URL here (documentConfig); the committed document names a variable.
  servers: [{ url: '{publicUrl}', description: "a worker's public server (its PUBLIC_URL)", variables: { publicUrl: { default: 'http://localhost:8080', description: 'PUBLIC_URL of the worker' } } }],
  tags: [
    { name: 'Tenants', description: 'The tenants, their settings and state; created, patched and deleted over the API (those of the tenants file are read-only)' },
    { name: 'Runs', description: 'Sync runs: ask for one, follow it, read the history' },
    { name: 'Dead letters', description: 'Records that could not be pushed, and their replay' },
    { name: 'Connect links', description: 'Links for a customer to connect their Xero organisation or QuickBooks company, and revoking the connection' },
    { name: 'Events', description: 'The events sent to run-webhook receivers: catch up, redeliver, test' },
    { name: 'Webhooks', description: 'What a run-webhook receiver gets: Standard Webhooks, signed with the tenant\'s secret' },
    { name: 'Document', description: 'This OpenAPI document' },
  ],
};

/** The document's settings for a worker: its servers are the worker's PUBLIC_URL when it has one. */
export function documentConfig(publicUrl: string | undefined): typeof DOCUMENT_CONFIG {
  if (publicUrl === undefined) return DOCUMENT_CONFIG;
  return { ...DOCUMENT_CONFIG, servers: [{ url: publicUrl.replace(/\/+$/, ''), description: 'this worker (PUBLIC_URL)' }] as never };
}

export interface ApiDeps {
  keys: readonly ApiKey[];
  /** API_RATE_PER_MIN: requests per key name per minute (per process). */
  ratePerMin: number;
  /** API_IDEMPOTENCY_MAX_PER_KEY: Idempotency-Key answers kept per key name (default IDEMPOTENCY_MAX_PER_KEY). */
  idempotencyMaxPerKey?: number;
  /** Seals kept answers that hold a secret (connect links): the token cipher of PLATFORM_TOKEN_KEY; absent: not kept. */
  sealer?: Sealer;
  redis: Redis;
  prefix: string;
  stores: Pick<StateStores, 'runs' | 'deadLetters' | 'cursors' | 'pending' | 'runLock'>;
  syncQueue: Queue;
  tenant(id: string): TenantConfig | undefined;
  tenants(): readonly TenantConfig[];
  /** Tenants created over the API (src/state/tenant-store.ts); absent: creating one is refused (501). */
  tenantStore?: TenantStore;
  /** Where a tenant comes from (absent: a tenant not in tenantStore is one of the file). */
  sourceOf?(id: string): 'file' | 'api' | undefined;
  /** The settings a new tenant's platform is checked against, as the tenants file's are at load. */
  platformEnv?: { FILE_PLATFORM_ROOT?: string | undefined; PLATFORM_TOKEN_KEY?: string | undefined };
  /** Why a tenant created over the API may not send requests to `url` (not https, not a public address), or undefined. */
  outboundCheck?(url: string): Promise<string | undefined>;
  /**
   * Revokes the tenant's connection at its platform and deletes its token chain (src/connect/revoke.ts, as `connect
   * revoke`), telling `connection.changed`; `by` is who asked (`api:<key name>`). Undefined: PLATFORM_TOKEN_KEY is not
   * set (the chain cannot be read). Absent: the same, 501.
   */
  revokeConnection?(tenantId: string, by: string): Promise<RevokeOutcome | undefined>;
  /** Connect links (PUBLIC_URL and PLATFORM_TOKEN_KEY set); absent: 501. */
  connect?: ConnectLinks;
  /**
   * The connection states of these tenants (src/connect/status.ts with the token keys, so a chain they cannot decrypt
   * is needs_reconnect); absent: read without the keys (only a chain marked undecryptable by a run shows so).
   */
  connections?: (tenants: readonly TenantConfig[]) => Promise<ConnectionReport[]>;
  /** The run webhooks' event log (src/state/event-log.ts): `GET /v1/events`; absent: no event is found. */
  events?: Pick<EventLog, 'page' | 'get' | 'seqOf' | 'setDelivery'>;
  /** Where `tenant.*` events go (App.notify: the event log, then the receiver). */
  notify?: EventSink;
  /** Whether a tenant (or, gone, the fleet) has a receiver now (notify.url or RUN_WEBHOOK_URL). */
  hasReceiver?(tenantId: string): boolean;
  /** Queues a delivery of a logged event again, under its id (src/queues `redeliverNotify`). */
  redeliver?(event: NotifyEvent): Promise<'queued' | 'promoted' | 'already queued'>;
  /** Sends a signed `webhook.test` to the tenant's receiver now (one attempt); undefined: it has none. */
  testWebhook?(tenantId: string): Promise<{ eventId: string; ok: boolean; statusCode?: number; error?: string; ms: number } | undefined>;
  /** The tenant's last outgoing event and its delivery (the run webhooks' store, src/state/deliveries.ts); absent: `lastWebhook` is null. */
  lastDelivery?: (tenantId: string) => Promise<LastDelivery | undefined>;
  logger: Logger;
  /** PUBLIC_URL: the document's `servers` (absent: the committed document's variable). */
  publicUrl?: string | undefined;
  /** Counts an answer: key name (`(none)` before authentication), route template, status. */
  onRequest?(e: { key: string; route: string; status: number }): void;
}

/** What the API does with connect links (src/connect: Connect.link and its LinkStore). */
export interface ConnectLinks {
  /** Makes and records a link; throws LinkRefusedError for a tenant that has a connection without `reconnect`. */
  link(tenant: string, o: { ttlMs: number; reconnect: boolean; by: string }): Promise<{ url: string; id: string; expiresAt: number; reconnect: boolean }>;
  /** The outstanding links of a tenant. */
  links(tenant: string): Promise<readonly LinkRecord[]>;
  /** Revokes one outstanding link: false when there is none of that id. */
  revokeLink(tenant: string, id: string): Promise<boolean>;
  redirectUri: string;
}

type ApiEnv = { Bindings: HttpBindings; Variables: { key: ApiKey } };

/** A response where the typed routes want theirs (every answer here is built and checked by the tests against the document). */
const send = (r: Response): never => r as never;
const fail = (p: Problem, headers?: Record<string, string>): never => send(problemResponse(p, headers));
const ok = (status: 200 | 201 | 202, body: unknown, headers: Record<string, string> = {}): never =>
  send(new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } }));
const unknownTenant = (): never => fail(plain(404, 'no such tenant'));

const invalidIdempotencyKey = (): Response =>
  problemResponse(ours('invalid-idempotency-key', 'Idempotency-Key: 1-255 printable ASCII characters', [{ in: 'header', path: ['Idempotency-Key'], message: 'not 1-255 printable ASCII characters' }]));

const WHERE = { json: 'body', query: 'query', param: 'path', header: 'header' } as const;

/**
 * A zod issue as the API tells it (decision 0234): an unknown field under its own name (one error each), and a message
 * that names the field and the form it takes. Messages of our schemas name their field already; zod's own get it put
 * in front.
 */
function fieldErrors(where: string, issue: z.core.$ZodIssue): FieldError[] {
  const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
  if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => ({ in: where, path: [...path, k], message: `${k} ${issue.message}` }));
  const field = path.length === 0 ? `the ${where}` : path.join('.');
  const named = path.length > 0 && issue.message.startsWith(`${String(path[path.length - 1])} `);
  return [{ in: where, path, message: named ? issue.message : `${field}: ${issue.message}` }];
}

/**
 * The API's Hono app; `unauthorized` is the public server's one 401. Without `deps` (openApiDocument) the routes
 * are declared only: a request would fail.
 */
export function apiApp(deps: ApiDeps | undefined, unauthorized: () => Response): OpenAPIHono<ApiEnv> {
  const api = new OpenAPIHono<ApiEnv>({
    defaultHook: (result) => {
      if (result.success) return undefined;
      const where = WHERE[result.target as keyof typeof WHERE] ?? 'body';
      // The Idempotency-Key header's schema bounds its length (for the document); whichever rule it breaks, it is
      // the one problem of an invalid key, as `once` answers a key that passed the schema but not IDEMPOTENCY_KEY.
      if (where === 'header' && result.error.issues.every((i) => i.path[0] === 'idempotency-key')) return invalidIdempotencyKey();
      const errors: FieldError[] = result.error.issues.flatMap((i) => fieldErrors(where, i));
      return problemResponse(where === 'body' ? ours('invalid-request', 'the body did not validate', errors) : ours('invalid-query', `the ${where} did not validate`, errors));
    },
  });
  api.openAPIRegistry.registerComponent('securitySchemes', 'apiKey', { type: 'http', scheme: 'bearer', description: 'an API key of API_KEYS' });
  registerHeaders(api);
  let document: unknown;
  const documentOf = (): unknown => (document ??= api.getOpenAPI31Document(documentConfig(deps?.publicUrl)));
  if (deps === undefined) {
    declare(api, undefined, documentOf);
    return api;
  }
  const d = deps;
  const digests = digestKeys(d.keys);
  const limiter = new MinuteLimiter(d.ratePerMin);

  const gate: MiddlewareHandler<ApiEnv> = async (c, next) => {
    const started = performance.now();
    const requestId = requestIdOf(c.req.raw);
    const t = templateOf(c.req.path);
    const route = t?.template ?? '(other)';
    const key = keyOf(digests, c.req.header('authorization'));
    // The document is public (decision 0233): what a client generator or a linter reads first, holding no secret.
    const open = route === ROUTES.openapi.path && c.req.method === 'GET';
    if (key === undefined && !open) {
      d.onRequest?.({ key: '(none)', route, status: 401 });
      return unauthorized();
    }
    if (key !== undefined) c.set('key', key);
    const name = key?.name ?? '(none)';
    const wait = key === undefined ? 0 : limiter.take(key.name);
    if (wait > 0) c.res = problemResponse(plain(429, `over ${d.ratePerMin} requests a minute for key ${name}`), { 'retry-after': String(wait) });
    else if (c.req.method === 'POST' && hasBody(c) && t !== undefined && t.methods.includes('POST') && !t.bodies.includes('POST')) c.res = problemResponse(ours('invalid-request', 'this route takes no body', [{ in: 'body', path: [], message: `the body: ${route} takes none (send the request without one)` }]));
    else if (c.req.method === 'POST' && hasBody(c) && !isJsonType(c.req.header('content-type'))) c.res = problemResponse(ours('unsupported-media-type', 'send the body as application/json'));
    else if (c.req.method === 'PATCH' && !isMergePatch(c.req.header('content-type'))) c.res = problemResponse(ours('unsupported-media-type', 'send the body as application/merge-patch+json (RFC 7396)'));
    else await next();
    const status = c.res.status;
    d.onRequest?.({ key: name, route, status });
    d.logger.info({ requestId, key: name, method: c.req.method, route, status, ms: Math.round(performance.now() - started) }, 'api request');
    return undefined;
  };
  // '/v1/*' matches '/v1' too: one gate for every path of the API.
  api.use('/v1/*', gate);
  api.on(['POST', 'PATCH'], '/v1/*', limit);
  api.on('POST', '/v1/*', emptyIsNone);
  api.on(['POST', 'PATCH'], ['/v1/tenants', '/v1/tenants/:tenantId'], noVariables);
  declare(api, d, documentOf);
  api.all('/v1/*', (c) => fallback(c));
  api.onError((err, c) => {
    if (err instanceof HTTPException && err.status === 400) return problemResponse(ours('malformed-body', 'the body is not valid JSON'));
    d.logger.error({ err: err.message, route: templateOf(c.req.path)?.template ?? '(other)' }, 'api: request failed');
    return problemResponse(plain(503, 'the request could not be served now (Redis or the queue did not answer); try again'));
  });
  return api;
}

const limit: MiddlewareHandler<ApiEnv> = bodyLimit({ maxSize: MAX_API_BODY_BYTES, onError: () => problemResponse(ours('body-too-large', `the body is over ${MAX_API_BODY_BYTES} bytes`)) });

const isMergePatch = (type: string | undefined): boolean => type?.split(';')[0]?.trim().toLowerCase() === 'application/merge-patch+json';

/** The paths of strings holding a `${VAR}` reference (the tenants file's substitution). */
function variablePaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return /\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(value) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => variablePaths(v, [...path, i]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => variablePaths(v, [...path, k]));
  return [];
}

/**
 * A tenant's body over the API holds values, never `${VAR}`: the file's references read the environment of the
 * worker that loads it, which an API caller must not reach (nor leave a tenant that depends on one machine's
 * settings). Checked before the schema, so the answer names the reference rather than what it would have broken.
 */
const noVariables: MiddlewareHandler<ApiEnv> = async (c, next) => {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    // Not JSON: the route's validator answers it.
    return next();
  }
  const paths = variablePaths(body);
  if (paths.length === 0) return next();
  c.res = problemResponse(
    ours(
      'invalid-request',
      'the body did not validate',
      paths.map((path) => ({ in: 'body', path, message: '`${VAR}` references are for the tenants file; over the API send the value itself' })),
    ),
  );
  return undefined;
};

/**
 * An empty body sent as JSON is no body (decision 0236): a route whose body is optional answers it as one without
 * (`{}`), as it answers a request with no Content-Type; a route whose body is required finds its fields missing (422).
 */
const emptyIsNone: MiddlewareHandler<ApiEnv> = async (c, next) => {
  if (c.req.header('content-length') === '0' && isJsonType(c.req.header('content-type'))) (c.req.bodyCache as unknown as { text?: Promise<string> }).text = Promise.resolve('{}');
  return next();
};

/** The response headers every route refers to (routes.ts): declared once, in components.headers. */
function registerHeaders(api: OpenAPIHono<ApiEnv>): void {
  const string = { type: 'string' as const };
  api.openAPIRegistry.registerComponent('headers', 'RequestId', {
    description: "this answer's id: the request's own `Request-Id` (or `X-Request-Id`) when it is 1-128 characters of `A-Z a-z 0-9 . _ ~ : @ + = / -`, else one made here (`req_...`); logged with the request",
    schema: { ...string, maxLength: 128, example: 'req_8Hk2pQw9ZrT4vLm1' },
  });
  api.openAPIRegistry.registerComponent('headers', 'RetryAfter', { description: 'seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } });
  api.openAPIRegistry.registerComponent('headers', 'WWWAuthenticate', {
    description: 'RFC 6750: `Bearer`, with `error="invalid_token"` when the request sent a Bearer token that is not a key',
    schema: { ...string, enum: ['Bearer', 'Bearer error="invalid_token"'] },
  });
  api.openAPIRegistry.registerComponent('headers', 'IdempotentReplayed', { description: '`true`: the first answer to this Idempotency-Key, given again (nothing was done this time)', schema: { ...string, enum: ['true'] } });
  api.openAPIRegistry.registerComponent('headers', 'ETag', { description: 'the version of the tenant: send it as If-Match to patch this version only', schema: string });
}

function hasBody(c: Context): boolean {
  const length = c.req.header('content-length');
  return (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
}

function fallback(c: Context<ApiEnv>): Response {
  const t = templateOf(c.req.path);
  if (t !== undefined && !t.methods.includes(c.req.method)) return problemResponse(plain(405, `${c.req.method} is not served at ${t.template}`), { allow: t.methods.join(', ') });
  return problemResponse(plain(404, `no such route: ${c.req.method} ${c.req.path} (every route is in the document, GET /v1/openapi.json, served without a key)`));
}

/** The routes and, given deps, their handlers. */
function declare(api: OpenAPIHono<ApiEnv>, d: ApiDeps | undefined, documentOf: () => unknown): void {
  const need = (): ApiDeps => {
    if (d === undefined) throw new Error('the API was built for its document only');
    return d;
  };
  const idempotency =
    d === undefined
      ? undefined
      : new IdempotencyStore(d.redis, d.prefix, { ...(d.idempotencyMaxPerKey !== undefined ? { maxPerKey: d.idempotencyMaxPerKey } : {}), ...(d.sealer !== undefined ? { sealer: d.sealer } : {}) });
  /** The tenant if this key may see it. */
  const visible = (c: Context<ApiEnv>, id: string): TenantConfig | undefined => (maySee(c.get('key'), id) ? need().tenant(id) : undefined);

  /** Runs `answer` once per Idempotency-Key (idempotency.ts); `body` is the validated body; `secret`: the answer holds one (kept sealed). */
  const once = async (c: Context<ApiEnv>, tenant: string, body: unknown, answer: () => Promise<Response>, secret = false): Promise<Response> => {
    const header = c.req.header('idempotency-key');
    if (header === undefined || idempotency === undefined) return answer();
    if (!IDEMPOTENCY_KEY.test(header)) return invalidIdempotencyKey();
    const claim = await idempotency.claim(tenant, c.get('key').name, header, `${c.req.method} ${c.req.path} ${JSON.stringify(body ?? null)}`);
    if (claim.kind === 'reused') return problemResponse(ours('idempotency-key-reused', 'this Idempotency-Key was used for another request (method, path or body) in the last 24 h'));
    if (claim.kind === 'in_flight') return problemResponse(ours('idempotency-key-in-flight', 'a request with this Idempotency-Key is under way; retry once it has answered'));
    if (claim.kind === 'replay') {
      const { status, body: text, location } = claim.answer;
      return new Response(text, { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'idempotent-replayed': 'true', ...(location ? { location } : {}) } });
    }
    try {
      const res = await answer();
      if (res.status >= 200 && res.status < 300) {
        const location = res.headers.get('location');
        await claim.finish({ status: res.status, body: await res.clone().text(), ...(location ? { location } : {}) }, { secret });
      } else await claim.abandon();
      return res;
    } catch (err) {
      await claim.abandon().catch(() => undefined);
      throw err;
    }
  };

  const requested = async (tenant: string, mode: SyncMode, since?: string): Promise<Response> => {
    const q = need().syncQueue;
    const { jobId, requestedAt } = await requestSync(q, tenant, mode, { trigger: 'api', ...(since !== undefined ? { since } : {}) });
    if (jobId === undefined) throw new Error('the queue gave the run no job id');
    const job = await q.getJob(jobId);
    const runId = `run-${jobId}`;
    const link = `/v1/tenants/${tenant}/runs/${runId}`;
    // Joined: the job the queue answered with was asked for by another request (a job already gone ran this one).
    const deduplicated = job !== undefined && (job.data as { requestedAt?: number }).requestedAt !== requestedAt;
    return ok(202, { runId, jobId, tenantId: tenant, mode, requestedAt: isoOf(requestedAt), deduplicated, links: { run: link } }, { location: link });
  };

  api.openapi(ROUTES.openapi, async () => ok(200, documentOf()));

  /** Reads the stored tenants' changes: one written by another process shows here before it is answered about. */
  const fresh = async (): Promise<void> => {
    await d?.tenantStore?.sync();
  };
  const sourceOf = (id: string): 'file' | 'api' | undefined => {
    const deps = need();
    return deps.sourceOf?.(id) ?? (deps.tenantStore?.get(id) !== undefined ? 'api' : deps.tenant(id) !== undefined ? 'file' : undefined);
  };
  /** The tenant's settings and entity tag: an api tenant's as stored, a file tenant's from its config. */
  const metaOf = (t: TenantConfig): TenantMeta => {
    const stored = sourceOf(t.id) === 'api' ? need().tenantStore?.get(t.id) : undefined;
    if (stored !== undefined) return { source: 'api', settings: stored.settings, secretsSet: stored.secrets, etag: stored.etag };
    const { settings, secrets } = publicSettings(t);
    return { source: 'file', settings, secretsSet: secrets, etag: settingsTag(settings, secrets) };
  };
  const viewOf = async (t: TenantConfig, meta = metaOf(t)): Promise<never> => {
    const [[connection], nextRuns] = await Promise.all([statesOf(need(), [t]), nextRunsOf(need(), [t])]);
    return ok(200, await tenantView(need(), t, connection, meta, nextRuns.get(t.id)), { etag: meta.etag });
  };
  /**
   * What the schema alone cannot say of a tenant: its platform under this deployment's settings, identities it would
   * share, and (the API is less trusted than the operator who writes the file) every address it would send requests
   * to: https, to a public address unless OUTBOUND_ALLOWED_NETWORKS lists it.
   */
  const checkNew = async (t: TenantConfig, entry: JsonObject): Promise<Issue[]> => {
    const issues: Issue[] = tenantIssues(t, need().tenants(), need().platformEnv ?? {});
    const deps = need();
    if (deps.outboundCheck !== undefined) {
      // The addresses the caller wrote (a default is the platform's own).
      for (const { path, url } of urlsOf(entry)) {
        const why = await deps.outboundCheck(url);
        if (why !== undefined) issues.push({ path, message: why });
      }
    }
    return issues;
  };
  const refused = (issues: Issue[]): never => fail(ours('invalid-request', 'the body did not validate', issues.map((i) => ({ in: 'body', path: i.path, message: i.message }))));

  api.openapi(ROUTES.listTenants, async (c) => {
    const key = c.get('key');
    const { limit: n, cursor, q, state } = c.req.valid('query');
    let after: string | undefined;
    if (cursor !== undefined) {
      after = decodeCursor(cursor, (m) => /^[a-z][a-z0-9_-]{0,62}$/.test(m));
      if (after === undefined) return fail(ours('invalid-query', 'the query did not validate', [{ in: 'query', path: ['cursor'], message: 'not a cursor this API gave (pass `next` of a page as it is)' }]));
    }
    await fresh();
    const from = after;
    const all = need()
      .tenants()
      .filter((t) => maySee(key, t.id) && (from === undefined || t.id > from))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const text = q?.trim().toLowerCase();
    const needle = text === undefined || text === '' ? undefined : text;
    // With a filter, a page is the first `n` matches after the cursor, and one more tells whether there is a next page.
    const { kept, reports } = needle === undefined && state === undefined ? { kept: all.slice(0, n + 1), reports: new Map<string, ConnectionReport | undefined>() } : await select(need(), all, n + 1, needle, state);
    const tenants = kept.slice(0, n);
    await readReports(need(), tenants, reports);
    const nextRuns = await nextRunsOf(need(), tenants);
    const last = tenants[tenants.length - 1];
    return ok(200, {
      items: await Promise.all(tenants.map((t) => tenantView(need(), t, reports.get(t.id), metaOf(t), nextRuns.get(t.id)))),
      next: kept.length > n && last !== undefined ? encodeCursor(last.id) : null,
    });
  });

  api.openapi(ROUTES.createTenant, async (c) => {
    const parsed = c.req.valid('json');
    if (c.get('key').tenants !== undefined) return fail(ours('key-limited', `key ${c.get('key').name} is limited to some tenants: only a key of every tenant creates tenants`));
    const store = need().tenantStore;
    if (store === undefined || !store.sealing) return fail(ours('tenants-need-token-key', 'set PLATFORM_TOKEN_KEY (e.g. `openssl rand -base64 32`): the secrets of a tenant created over the API are sealed under it'));
    await fresh();
    const source = sourceOf(parsed.id);
    if (source !== undefined) return fail(ours('tenant-exists', source === 'file' ? `${parsed.id} is a tenant of the tenants file` : `a tenant ${parsed.id} was created already`));
    const entry = await c.req.json<JsonObject>();
    const issues = await checkNew(parsed, entry);
    if (issues.length > 0) return refused(issues);
    const made = await store.create(entry);
    if (made.kind === 'exists') return fail(ours('tenant-exists', `a tenant ${parsed.id} was created already`));
    need().logger.info({ tenant: parsed.id, platform: parsed.platform.kind, key: c.get('key').name }, 'api: tenant created');
    const meta = metaOf(made.tenant.config);
    await need().notify?.emit(tenantEvent({ type: 'tenant.created', tenantId: parsed.id, source: 'api', platform: parsed.platform.kind, at: Date.now(), version: meta.etag }));
    const [[connection], nextRuns] = await Promise.all([statesOf(need(), [made.tenant.config]), nextRunsOf(need(), [made.tenant.config])]);
    return ok(201, await tenantView(need(), made.tenant.config, connection, meta, nextRuns.get(parsed.id)), { location: `/v1/tenants/${parsed.id}`, etag: meta.etag });
  });

  api.openapi(ROUTES.getTenant, async (c) => {
    const { tenantId } = c.req.valid('param');
    await fresh();
    const tenant = visible(c, tenantId);
    if (!tenant) return unknownTenant();
    return viewOf(tenant);
  });

  api.openapi(ROUTES.patchTenant, async (c) => {
    const { tenantId } = c.req.valid('param');
    const { 'if-match': ifMatch } = c.req.valid('header');
    const patch = c.req.valid('json');
    await fresh();
    const tenant = visible(c, tenantId);
    if (!tenant) return unknownTenant();
    const store = need().tenantStore;
    if (sourceOf(tenantId) === 'file' || store === undefined) return fail(ours('tenant-from-file', `${tenantId} is a tenant of the tenants file: change it there (the API changes the tenants it created only)`));
    const before = store.get(tenantId);
    const done = await store.patch(tenantId, patch, { ...(ifMatch !== undefined ? { ifMatch } : {}), check: checkNew });
    if (done.kind === 'missing') return unknownTenant();
    if (done.kind === 'stale') return fail(ours('tenant-changed', `${tenantId} changed since the version If-Match names: read it again, and patch that version`));
    if (done.kind === 'invalid') return refused(done.issues);
    need().logger.info({ tenant: tenantId, key: c.get('key').name }, 'api: tenant patched');
    // Told when a field changed (a patch that sets what was there tells nothing).
    const changed = before === undefined ? [] : changedFields(before, done.tenant, patch);
    if (changed.length > 0) await need().notify?.emit(tenantEvent({ type: 'tenant.updated', tenantId, source: 'api', changed, at: Date.now(), version: done.tenant.etag }));
    return viewOf(done.tenant.config);
  });

  api.openapi(ROUTES.deleteTenant, async (c) => {
    const { tenantId } = c.req.valid('param');
    await fresh();
    if (!visible(c, tenantId)) return unknownTenant();
    if (c.get('key').tenants !== undefined) return fail(ours('key-limited', `key ${c.get('key').name} is limited to some tenants: only a key of every tenant deletes tenants`));
    const store = need().tenantStore;
    if (sourceOf(tenantId) === 'file' || store === undefined) return fail(ours('tenant-from-file', `${tenantId} is a tenant of the tenants file: remove it there (the API deletes the tenants it created only)`));
    if (!(await store.remove(tenantId))) return unknownTenant();
    const purge = c.req.valid('query').purge === 'true';
    const keys = purge ? await purgeTenantState(need().redis, need().prefix, tenantId) : undefined;
    need().logger.info({ tenant: tenantId, key: c.get('key').name, ...(keys !== undefined ? { purgedKeys: keys } : {}) }, 'api: tenant deleted');
    await need().notify?.emit(tenantEvent({ type: 'tenant.deleted', tenantId, source: 'api', at: Date.now() }));
    return send(new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } }));
  });

  api.openapi(ROUTES.requestRun, async (c) => {
    const { tenantId } = c.req.valid('param');
    const body = c.req.valid('json');
    if (!visible(c, tenantId)) return unknownTenant();
    return send(await once(c, tenantId, body, () => requested(tenantId, body.mode, body.since)));
  });

  api.openapi(ROUTES.listRuns, async (c) => {
    const { tenantId } = c.req.valid('param');
    const { limit: n } = c.req.valid('query');
    if (!visible(c, tenantId)) return unknownTenant();
    return ok(200, { items: (await need().stores.runs.recent(tenantId, n)).map(runSummaryOf) });
  });

  api.openapi(ROUTES.getRun, async (c) => {
    const { tenantId, runId } = c.req.valid('param');
    if (!visible(c, tenantId)) return unknownTenant();
    const run = await runView(need(), tenantId, runId);
    return run === undefined ? fail(plain(404, `no run ${runId} of ${tenantId}`)) : ok(200, run);
  });

  api.openapi(ROUTES.listDeadLetters, async (c) => {
    const { tenantId } = c.req.valid('param');
    const { entity, limit: n, cursor } = c.req.valid('query');
    if (!visible(c, tenantId)) return unknownTenant();
    const before = cursor === undefined ? undefined : decodeCursor(cursor, (m) => DeadLetterStore.isCursor(m));
    if (cursor !== undefined && before === undefined) {
      return fail(ours('invalid-query', 'the query did not validate', [{ in: 'query', path: ['cursor'], message: 'not a cursor this API gave (pass `next` of a page as it is)' }]));
    }
    const page = await need().stores.deadLetters.page(tenantId, { limit: n, ...(entity ? { entity } : {}), ...(before ? { before } : {}) });
    return ok(200, { items: page.entries.map(deadLetterOf), next: page.next === undefined ? null : encodeCursor(page.next) });
  });

  api.openapi(ROUTES.replayDeadLetters, async (c) => {
    const { tenantId } = c.req.valid('param');
    if (!visible(c, tenantId)) return unknownTenant();
    return send(await once(c, tenantId, null, () => requested(tenantId, 'replay')));
  });

  /** The tenant's connect links port, or the problem to answer (unknown tenant, links off, not a Xero/QuickBooks tenant). */
  const linksOf = (c: Context<ApiEnv>, tenantId: string): ConnectLinks | Response => {
    const tenant = visible(c, tenantId);
    if (!tenant) return problemResponse(plain(404, 'no such tenant'));
    const connect = need().connect;
    if (connect === undefined) return problemResponse(ours('connect-links-off', 'connect links need PUBLIC_URL and PLATFORM_TOKEN_KEY (and this server: WEBHOOK_PORT)'));
    if (oauthOf(tenant.platform) === undefined) return problemResponse(ours('not-connectable', `${tenantId} is a ${tenant.platform.kind} tenant: only ${OAUTH_KINDS.join(', ')} tenants are connected with a link`));
    return connect;
  };

  api.openapi(ROUTES.createConnectLink, async (c) => {
    const { tenantId } = c.req.valid('param');
    const body = c.req.valid('json');
    const connect = linksOf(c, tenantId);
    if (connect instanceof Response) return send(connect);
    const ttl = parseDuration(body.expires ?? '7d');
    if (ttl === undefined || ttl <= 0 || ttl > MAX_LINK_MS) return fail(ours('invalid-request', 'the body did not validate', [{ in: 'body', path: ['expires'], message: 'a duration up to 30d, such as 2h or 7d' }]));
    return send(
      await once(c, tenantId, body, async () => {
        let made;
        try {
          made = await connect.link(tenantId, { ttlMs: ttl, reconnect: body.reconnect === true, by: `api:${c.get('key').name}` });
        } catch (err) {
          if (err instanceof LinkRefusedError) return problemResponse(ours('already-connected', `${err.message} ("reconnect": true)`));
          throw err;
        }
        need().logger.info({ tenant: tenantId, link: made.id, reconnect: made.reconnect, key: c.get('key').name }, 'api: connect link made');
        return ok(201, { tenantId, linkId: made.id, url: made.url, expiresAt: isoOf(made.expiresAt), reconnect: made.reconnect, redirectUri: connect.redirectUri });
      }, true),
    );
  });

  api.openapi(ROUTES.listConnectLinks, async (c) => {
    const { tenantId } = c.req.valid('param');
    const connect = linksOf(c, tenantId);
    if (connect instanceof Response) return send(connect);
    const links = await connect.links(tenantId);
    return ok(200, { items: links.map((l) => ({ linkId: l.id, expiresAt: isoOf(l.expiresAt), reconnect: l.reconnect, createdAt: isoOf(l.createdAt), by: l.by })) });
  });

  api.openapi(ROUTES.revokeConnectLink, async (c) => {
    const { tenantId, linkId } = c.req.valid('param');
    const connect = linksOf(c, tenantId);
    if (connect instanceof Response) return send(connect);
    if (!(await connect.revokeLink(tenantId, linkId))) return fail(ours('no-such-link', `${tenantId} has no outstanding connect link ${linkId} (used, revoked, expired or never made)`));
    need().logger.info({ tenant: tenantId, link: linkId, key: c.get('key').name }, 'api: connect link revoked');
    return send(new Response(null, { status: 204, headers: { 'cache-control': 'no-store' } }));
  });

  api.openapi(ROUTES.revokeConnection, async (c) => {
    const { tenantId } = c.req.valid('param');
    await fresh();
    const tenant = visible(c, tenantId);
    if (!tenant) return unknownTenant();
    if (oauthOf(tenant.platform) === undefined) return fail(ours('not-connectable', `${tenantId} is a ${tenant.platform.kind} tenant: only ${OAUTH_KINDS.join(', ')} tenants have a connection to revoke`));
    const key = c.get('key').name;
    const outcome = await need().revokeConnection?.(tenantId, `api:${key}`);
    if (outcome === undefined) return fail(ours('revoke-needs-token-key', 'set PLATFORM_TOKEN_KEY: the token chain is sealed under it, and read to tell the platform'));
    need().logger.info({ tenant: tenantId, connection: outcome.connection, platform: outcome.platform, chainDeleted: outcome.chainDeleted, linksRevoked: outcome.linksRevoked, key }, 'api: connection revoked');
    return ok(200, { tenantId, connection: outcome.connection ?? null, platform: outcome.platform, chainDeleted: outcome.chainDeleted, linksRevoked: outcome.linksRevoked });
  });

  // Events (decisions 0220-0223): the event log, oldest first; a key limited to some tenants sees theirs only.
  const notCursor = (): never =>
    fail(ours('invalid-query', 'the query did not validate', [{ in: 'query', path: ['after'], message: 'not a cursor this API gave (pass `next` as it is) nor the id of a kept event' }]));
  /** The kept event if this key may see its tenant. */
  const visibleEvent = async (c: Context<ApiEnv>, id: string): Promise<LoggedEvent | undefined> => {
    const e = EVENT_ID.test(id) ? await need().events?.get(id) : undefined;
    return e !== undefined && maySee(c.get('key'), e.tenantId) ? e : undefined;
  };

  api.openapi(ROUTES.listEvents, async (c) => {
    const key = c.get('key');
    const { after, limit: n, type, tenantId, order } = c.req.valid('query');
    const log = need().events;
    // A cursor names its order (`ev:` oldest first, `evn:` newest first): one of the other order is refused.
    const mark = order === 'newest' ? 'evn' : 'ev';
    let from = 0;
    if (after !== undefined) {
      const seq = EVENT_ID.test(after) ? await log?.seqOf(after) : decodeCursor(after, (m) => new RegExp(`^${mark}:\\d{1,15}$`).test(m))?.slice(mark.length + 1);
      if (seq === undefined) return notCursor();
      from = Number(seq);
    }
    const tenants = key.tenants === undefined ? (tenantId === undefined ? undefined : [tenantId]) : [...key.tenants].filter((t) => tenantId === undefined || t === tenantId);
    const page =
      log === undefined
        ? { items: [], last: from, more: false }
        : await log.page({ after: from, limit: n, newestFirst: order === 'newest', ...(type !== undefined ? { type } : {}), ...(tenants !== undefined ? { tenants } : {}) });
    return ok(200, { items: page.items.map(eventView), next: page.more ? encodeCursor(`${mark}:${page.last}`) : null });
  });

  api.openapi(ROUTES.getEvent, async (c) => {
    const { eventId } = c.req.valid('param');
    const e = await visibleEvent(c, eventId);
    return e === undefined ? fail(plain(404, `no event ${eventId} kept`)) : ok(200, eventView(e));
  });

  api.openapi(ROUTES.redeliverEvent, async (c) => {
    const { eventId } = c.req.valid('param');
    const e = await visibleEvent(c, eventId);
    const d = need();
    if (e === undefined || d.redeliver === undefined) return fail(plain(404, `no event ${eventId} kept`));
    if (d.hasReceiver?.(e.tenantId) !== true) return fail(ours('no-receiver', `${e.tenantId} has no receiver now: set its notify.url (or RUN_WEBHOOK_URL), then redeliver`));
    // A delivery that ended (or never began) starts again from pending; one waiting or under way keeps its state.
    if (e.delivery.state === 'delivered' || e.delivery.state === 'failed' || e.delivery.state === 'no_receiver') await d.events?.setDelivery(e.event.id, { state: 'pending', attempts: 0 });
    const redelivery = await d.redeliver(e.event);
    d.logger.info({ tenant: e.tenantId, eventId, redelivery, key: c.get('key').name }, 'api: event redelivered');
    return ok(202, { id: e.event.id, tenantId: e.tenantId, redelivery });
  });

  api.openapi(ROUTES.testWebhook, async (c) => {
    const { tenantId } = c.req.valid('json');
    await fresh();
    if (!visible(c, tenantId)) return unknownTenant();
    const sent = await need().testWebhook?.(tenantId);
    if (sent === undefined) return fail(ours('no-receiver', `${tenantId} has no receiver: set its notify.url (or RUN_WEBHOOK_URL)`));
    need().logger.info({ tenant: tenantId, eventId: sent.eventId, delivered: sent.ok, statusCode: sent.statusCode, key: c.get('key').name }, 'api: test webhook sent');
    return ok(200, { eventId: sent.eventId, tenantId, delivered: sent.ok, statusCode: sent.statusCode ?? null, error: sent.error ?? null, durationMs: Math.max(0, Math.round(sent.ms)) });
  });

  // The document's `webhooks`: what a receiver gets, one entry per event type.
  registerWebhooks(api.openAPIRegistry);
}

const EVENT_ID = /^msg_[0-9a-f]{32}$/;

/** A logged event as the API shows it: the payload's `type`, `timestamp` and `data`, its id, tenant and delivery. */
function eventView(e: LoggedEvent): z.infer<typeof eventSchema> {
  const d = e.delivery;
  const delivery = { state: d.state, attempts: d.attempts, ...(d.statusCode !== undefined ? { statusCode: d.statusCode } : {}), ...(d.error !== undefined ? { error: d.error } : {}), at: isoOf(d.at) };
  return { id: e.event.id, type: e.event.type, timestamp: e.event.timestamp, tenantId: e.tenantId, data: e.event.data, delivery } as z.infer<typeof eventSchema>;
}

/** The top-level fields a patch changed: settings that differ, and fields holding a secret the patch names (secret values are not compared). */
function changedFields(before: { settings: JsonObject; secrets: readonly string[] }, after: { settings: JsonObject; secrets: readonly string[] }, patch: JsonObject): string[] {
  const fields = new Set([...Object.keys(before.settings), ...Object.keys(after.settings)]);
  const differ = [...fields].filter((k) => JSON.stringify(before.settings[k]) !== JSON.stringify(after.settings[k]));
  const secretFields = new Set([...before.secrets, ...after.secrets].map((p) => p.split('.')[0] ?? p));
  return [...new Set([...differ, ...Object.keys(patch).filter((k) => secretFields.has(k))])].sort();
}

/** Every address a tenant's config names (a string field whose name ends in `url`/`Url`), with its path. */
function urlsOf(value: unknown, path: (string | number)[] = []): { path: (string | number)[]; url: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => urlsOf(v, [...path, i]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => (typeof v === 'string' && /url$/i.test(k) ? [{ path: [...path, k], url: v }] : urlsOf(v, [...path, k])));
}

const statesOf = (d: ApiDeps, tenants: readonly TenantConfig[]): Promise<ConnectionReport[]> => d.connections?.(tenants) ?? connectionStates(d.redis, d.prefix, tenants);

/**
 * Reads the connection reports of those of these tenants not read yet into `reports` (undefined: a tenant without
 * one), tenant beside tenant: `statesOf` reads its tenants one after another.
 */
async function readReports(d: ApiDeps, tenants: readonly TenantConfig[], reports: Map<string, ConnectionReport | undefined>): Promise<void> {
  const unread = tenants.filter((t) => !reports.has(t.id));
  const read = await Promise.all(unread.map(async (t) => (await statesOf(d, [t]))[0]));
  unread.forEach((t, i) => reports.set(t.id, read[i]));
}

/** Tenants examined at once when `q` or `state` selects some: what each needs read side by side, a chunk after another. */
export const SCAN_CHUNK = 200;

/**
 * The first `want` of these tenants (visible to the key, in order of id, after the cursor) whose id or organisation
 * name holds `needle` and that are in `state` (the `state` parameter says which), and the connection reports read on
 * the way. Chunk by chunk, so a filter reads no more than the tenants up to its page (every tenant, when few match).
 */
async function select(d: ApiDeps, tenants: readonly TenantConfig[], want: number, needle: string | undefined, state: TenantState | undefined): Promise<{ kept: TenantConfig[]; reports: Map<string, ConnectionReport | undefined> }> {
  const kept: TenantConfig[] = [];
  const reports = new Map<string, ConnectionReport | undefined>();
  for (let i = 0; i < tenants.length && kept.length < want; i += SCAN_CHUNK) {
    let chunk = tenants.slice(i, i + SCAN_CHUNK);
    if (needle !== undefined) {
      // The id first (nothing to read); the organisation's name of a tenant connected with a link only.
      const byId = (t: TenantConfig): boolean => t.id.toLowerCase().includes(needle);
      await readReports(d, chunk.filter((t) => !byId(t) && oauthOf(t.platform) !== undefined), reports);
      chunk = chunk.filter((t) => byId(t) || (reports.get(t.id)?.name?.toLowerCase().includes(needle) ?? false));
    }
    if (state !== undefined && chunk.length > 0) {
      const holds = await inState(d, chunk, state, reports);
      chunk = chunk.filter((_, j) => holds[j] === true);
    }
    kept.push(...chunk);
  }
  return { kept: kept.slice(0, want), reports };
}

/** Whether each of these tenants is in `state`, as its view would show it: only what the state needs is read. */
async function inState(d: ApiDeps, tenants: readonly TenantConfig[], state: TenantState, reports: Map<string, ConnectionReport | undefined>): Promise<boolean[]> {
  const { stores } = d;
  const outcomes = (): Promise<(string | undefined)[]> => stores.runs.lastOutcomes(tenants.map((t) => t.id));
  switch (state) {
    case 'connected':
    case 'needs_reconnect':
    case 'awaiting_connection':
      await readReports(d, tenants, reports);
      return tenants.map((t) => reports.get(t.id)?.state === state);
    case 'running':
      return (await sendAll(d.redis, tenants.map((t) => ['exists', stores.runLock.key(t.id)]))).map((n) => n === 1);
    case 'failing':
      return (await outcomes()).map((o) => o === 'failed');
    case 'partial': {
      const [last, dead] = await Promise.all([outcomes(), sendAll(d.redis, tenants.map((t) => ['hlen', stores.deadLetters.key(t.id)]))]);
      return last.map((o, i) => o === 'partial' || Number(dead[i] ?? 0) > 0);
    }
    case 'waiting': {
      const [last] = await Promise.all([outcomes(), readReports(d, tenants, reports)]);
      return last.map((o, i) => o === 'waiting' || reports.get(tenants[i]?.id ?? '')?.state === 'awaiting_connection');
    }
  }
}

/**
 * When each of these tenants' next scheduled run is due (ms): the earliest next tick of its schedulers (incremental
 * and reconcile, src/queues/schedulers.ts). BullMQ 6 keeps a queue's schedulers in its `repeat` sorted set, scored by
 * their next tick (what `getJobScheduler` answers as `next`): one ZMSCORE for a page (one key: one slot on a Cluster).
 */
async function nextRunsOf(d: ApiDeps, tenants: readonly TenantConfig[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (tenants.length === 0) return out;
  const tick = JOBS.tick;
  const modes = ['incremental', 'reconcile'] as const;
  const ids = tenants.flatMap((t) => modes.map((mode) => tick.schedulerId?.({ tenantId: t.id, mode }) ?? ''));
  const scores = await d.redis.zmscore(`${queuePrefix(d.prefix, QUEUES.schedule)}:${QUEUES.schedule}:repeat`, ...ids);
  tenants.forEach((t, i) => {
    const next = scores
      .slice(i * modes.length, (i + 1) * modes.length)
      .filter((v): v is string => v !== null)
      .map(Number)
      .filter(Number.isFinite);
    if (next.length > 0) out.set(t.id, Math.min(...next));
  });
  return out;
}

/** The schedule the tenant's schedulers are written with (ensureTickSchedules), defaults applied. */
function scheduleOf(t: TenantConfig): z.infer<typeof tenantSchema>['schedule'] {
  const s = t.schedule;
  const cron = s.cron ?? null;
  return { everyMs: cron === null ? (s.every ?? DEFAULT_EVERY_MS) : null, cron, tz: cron === null ? null : (s.tz ?? null), reconcileEveryMs: s.reconcileEvery };
}

/** What the view of a tenant says of its entry, and its entity tag. */
interface TenantMeta {
  source: 'file' | 'api';
  settings: JsonObject;
  secretsSet: string[];
  etag: string;
}

async function tenantView(d: ApiDeps, t: TenantConfig, connection: ConnectionReport | undefined, meta: TenantMeta, nextRunAt: number | undefined): Promise<z.infer<typeof tenantSchema>> {
  const { stores } = d;
  const [cursors, deadLetters, pendingInvoices, holder, last, delivery] = await Promise.all([
    Promise.all(ENTITIES.map(async (e) => [e, (await stores.cursors.get(t.id, e))?.highWater ?? null] as const)),
    stores.deadLetters.counts(t.id),
    stores.pending.count(t.id),
    stores.runLock.holder(t.id),
    stores.runs.last(t.id),
    d.lastDelivery?.(t.id),
  ]);
  const cursor = Object.fromEntries(cursors.map(([e, c]) => [e, c === null ? null : { updatedAt: c.updatedAt, id: c.id }]));
  return {
    id: t.id,
    source: meta.source,
    platform: t.platform.kind,
    settings: meta.settings,
    secretsSet: meta.secretsSet,
    connection: connection === undefined ? null : connectionOf(connection),
    running: holder !== undefined,
    lastRun: last === undefined ? null : runSummaryOf(last),
    cursors: cursor as z.infer<typeof tenantSchema>['cursors'],
    deadLetters,
    pendingInvoices,
    lastWebhook: delivery ?? null,
    schedule: scheduleOf(t),
    nextRunAt: nextRunAt === undefined ? null : isoOf(nextRunAt),
  };
}

/** A run from the history, else (not started yet) from its job: `run-<jobId>`. */
async function runView(d: ApiDeps, tenant: string, runId: string): Promise<z.infer<typeof runSchema> | undefined> {
  const run = await d.stores.runs.get(tenant, runId);
  if (run !== undefined) {
    // The dead letters this run made (their firstRunId), though later runs tried them again since (decision 0224).
    // Read until one more than shown is found (one page for a run that made them all), not every page; pages of 200
    // (25 at most: as deep as 10 of 500), so a run that made them all costs 200 entries read, not 500.
    const made = await d.stores.deadLetters.madeBy(tenant, runId, run.startedAt, { limit: RUN_DEAD_LETTERS, pageSize: 2 * RUN_DEAD_LETTERS, pages: 25 });
    return runOf(tenant, run, { items: made.entries, more: made.more });
  }
  const jobId = /^run-(.+)$/.exec(runId)?.[1];
  const job = jobId === undefined ? undefined : await d.syncQueue.getJob(jobId);
  const data = job?.data as { tenantId?: string; mode?: SyncMode; trigger?: string; requestedAt?: number } | undefined;
  if (job === undefined || data?.tenantId !== tenant || data.mode === undefined) return undefined;
  const state = await job.getState();
  const started = state === 'active' ? 'running' : state === 'delayed' ? 'delayed' : state === 'waiting' || state === 'prioritized' || state === 'waiting-children' ? 'queued' : state === 'failed' ? 'finished' : undefined;
  if (started === undefined) return undefined;
  const empty = Object.fromEntries(ENTITIES.map((e) => [e, {}])) as z.infer<typeof runSchema>['counts']['byEntity'];
  return {
    runId,
    tenantId: tenant,
    mode: data.mode,
    trigger: known(SYNC_TRIGGERS, data.trigger),
    state: started,
    outcome: state === 'failed' ? 'failed' : null,
    requestedAt: data.requestedAt === undefined ? null : isoOf(data.requestedAt),
    startedAt: null,
    finishedAt: null,
    totals: {},
    errorCount: state === 'failed' && job.failedReason ? 1 : 0,
    firstError: state === 'failed' && job.failedReason ? job.failedReason : null,
    phase: null,
    lastProgressAt: null,
    waitingOn: null,
    stalls: null,
    durationMs: null,
    counts: { total: {}, byEntity: empty },
    errors: state === 'failed' && job.failedReason ? [job.failedReason] : [],
    errorsOmitted: 0,
    deadLetters: { items: [], more: false },
  };
}

/** The OpenAPI 3.1 document of the API, generated from the routes (no Redis, no keys). */
export function openApiDocument(): Record<string, unknown> {
  return apiApp(undefined, () => new Response(null, { status: 401 })).getOpenAPI31Document(DOCUMENT_CONFIG) as unknown as Record<string, unknown>;
}
