/**
 * The routes of the control API, as data: path, method, parameters, body and every answer (the OpenAPI document is
 * generated from these). Handlers are in api.ts.
 */
import { createRoute, z } from '@hono/zod-openapi';
import {
  connectLinkRequestSchema,
  connectLinkSchema,
  connectionRevokedSchema,
  deadLetterPageSchema,
  deadLettersQuery,
  eventPageSchema,
  eventParams,
  eventSchema,
  eventsQuery,
  idempotencyHeaders,
  ifMatchHeaders,
  linkParams,
  outstandingLinksSchema,
  problemSchema,
  redeliverySchema,
  runListSchema,
  runParams,
  runRequestedSchema,
  runRequestSchema,
  runSchema,
  runsQuery,
  tenantCreateSchema,
  tenantListSchema,
  tenantParams,
  tenantPatchSchema,
  tenantSchema,
  tenantsQuery,
  webhookTestRequestSchema,
  webhookTestResultSchema,
} from './schemas.js';
import { PROBLEM_TYPE } from './problem.js';

/** A response header declared once in the document (components.headers, registered in api.ts). */
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
/** Every answer carries its Request-Id (decision 0230). */
type Headers = Record<string, { $ref: string } | { schema: { type: 'string' }; description?: string }>;
const answer = (description: string, headers: Headers = {}) => ({ description, headers: { 'Request-Id': header('RequestId'), ...headers } });
const problem = (description: string, headers: Headers = {}) => ({ ...answer(description, headers), content: { [PROBLEM_TYPE]: { schema: problemSchema } } });
const json = <T>(schema: T, description: string, headers: Headers = {}) => ({ ...answer(description, headers), content: { 'application/json': { schema } } });
const security = [{ apiKey: [] }];
const location = { Location: { schema: { type: 'string' as const }, description: 'where the new resource is' } };
/** A POST that takes an Idempotency-Key: its success may be a replay of the first answer. */
const replayable = { ...location, 'Idempotent-Replayed': header('IdempotentReplayed') };

/** Every route answers these. */
const always = {
  401: problem('no valid API key: the public server\'s one answer to every unauthenticated request', { 'WWW-Authenticate': header('WWWAuthenticate') }),
  429: problem('over API_RATE_PER_MIN requests of this key in a minute; Retry-After says when to try again', { 'Retry-After': header('RetryAfter') }),
  503: problem('Redis or the queue did not answer: try again'),
};
const ofTenant = { ...always, 400: problem('a path or query parameter did not validate (`errors`)'), 404: problem('no such tenant, or one this key may not see (the same answer)') };
const posted = {
  ...ofTenant,
  400: problem('a parameter, the Idempotency-Key or the JSON did not validate'),
  409: problem('a request with this Idempotency-Key is under way'),
  413: problem('the body is over 64 KiB'),
  415: problem('the body is not JSON'),
  422: problem('the body did not validate (`errors`), or the Idempotency-Key was used for another request'),
};
const jsonBody = <T>(schema: T, required = true) => ({ required, content: { 'application/json': { schema } } });
const etag = { ETag: header('ETag') };
const TENANTS = ['Tenants'];
const RUNS = ['Runs'];
const DEAD_LETTERS = ['Dead letters'];
const LINKS = ['Connect links'];
const EVENTS = ['Events'];

export const ROUTES = {
  listTenants: createRoute({
    method: 'get',
    path: '/v1/tenants',
    operationId: 'listTenants',
    summary: 'List tenants',
    description:
      'Every tenant this key may see, with its settings, platform, connection, last run, cursors, dead letters, pending invoices, schedule and next scheduled run, a page at a time in order of id: pass `next` as `cursor` until it is null. `q` and `state` select some (pass them again with `cursor`): a page holds up to `limit` of those, and `next` is null once no further tenant matches.',
    tags: TENANTS,
    security,
    request: { query: tenantsQuery },
    responses: { 200: json(tenantListSchema, 'a page; `next` is the cursor of the following one'), ...always, 400: problem('a query parameter did not validate, or the cursor is not one this API gave') },
  }),
  createTenant: createRoute({
    method: 'post',
    path: '/v1/tenants',
    operationId: 'createTenant',
    summary: 'Create a tenant',
    description: 'Creates a tenant from an entry of the tenants file (values, never `${VAR}`). Its secrets are sealed under PLATFORM_TOKEN_KEY and never answered (`secretsSet` names them). Needs a key of every tenant.',
    tags: TENANTS,
    security,
    request: { body: jsonBody(tenantCreateSchema) },
    responses: {
      201: json(tenantSchema, 'created; the Location header names it', { ...location, ...etag }),
      ...always,
      400: problem('the JSON did not validate'),
      403: problem('this key is limited to some tenants: it cannot create tenants'),
      409: problem('a tenant of this id exists (in the tenants file or created over the API)'),
      413: problem('the body is over 64 KiB'),
      415: problem('the body is not JSON'),
      422: problem('the body did not validate (`errors`): a `${VAR}` reference, a folder outside FILE_PLATFORM_ROOT, an identity another tenant has...'),
      501: problem('tenants cannot be created here: PLATFORM_TOKEN_KEY is not set (secrets are sealed under it)'),
    },
  }),
  getTenant: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}',
    operationId: 'getTenant',
    summary: 'Get a tenant',
    description: 'One tenant, as in the list: what a page about one customer needs ("last synced 3 minutes ago" is `lastRun.finishedAt`). The ETag is its version, for If-Match.',
    tags: TENANTS,
    security,
    request: { params: tenantParams },
    responses: { 200: json(tenantSchema, 'the tenant', etag), ...ofTenant },
  }),
  patchTenant: createRoute({
    method: 'patch',
    path: '/v1/tenants/{tenantId}',
    operationId: 'patchTenant',
    summary: 'Patch a tenant',
    description: 'Changes a tenant created over the API with a JSON merge patch (RFC 7396) of its entry: a member replaces, an object merges, null removes. With If-Match, only the version it names is patched (412 otherwise). Tenants of the tenants file are read-only.',
    tags: TENANTS,
    security,
    request: { params: tenantParams, headers: ifMatchHeaders, body: { required: true, content: { 'application/merge-patch+json': { schema: tenantPatchSchema } } } },
    responses: {
      200: json(tenantSchema, 'the tenant as patched', etag),
      ...ofTenant,
      409: problem('a tenant of the tenants file: read-only over the API'),
      412: problem('If-Match names another version than the tenant\'s (it changed since it was read)'),
      413: problem('the body is over 64 KiB'),
      415: problem('the body is not application/merge-patch+json'),
      422: problem('the patched entry did not validate (`errors`), or the patch holds a `${VAR}` reference'),
    },
  }),
  deleteTenant: createRoute({
    method: 'delete',
    path: '/v1/tenants/{tenantId}',
    operationId: 'deleteTenant',
    summary: 'Delete a tenant',
    description: 'Removes a tenant created over the API: no new run starts (one under way ends as it would); its state is kept for TENANT_STATE_RETENTION_DAYS, or purged at once with purge=true. Needs a key of every tenant; tenants of the tenants file are read-only.',
    tags: TENANTS,
    security,
    request: {
      params: tenantParams,
      query: z.object({
        purge: z
          .enum(['true', 'false'])
          .optional()
          .openapi({ description: "true: delete the tenant's state now (cursors, id maps, dead letters, runs); a tenant created again under its id then starts afresh" }),
      }),
    },
    responses: {
      204: answer('removed'),
      ...ofTenant,
      403: problem('this key is limited to some tenants: it cannot delete tenants'),
      409: problem('a tenant of the tenants file: read-only over the API'),
    },
  }),
  requestRun: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/runs',
    operationId: 'requestRun',
    summary: 'Request a run',
    description: 'Queues a run of the tenant: incremental (from the cursor), full (everything, or from `since`) or reconcile (every open invoice). One run waits per tenant, mode and since: a repeat joins it (`deduplicated`). With an Idempotency-Key a retry gets the first answer again.',
    tags: RUNS,
    security,
    request: { params: tenantParams, headers: idempotencyHeaders, body: jsonBody(runRequestSchema) },
    responses: {
      202: json(runRequestedSchema, 'queued; follow it at links.run (also the Location header)', replayable),
      ...posted,
    },
  }),
  listRuns: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/runs',
    operationId: 'listRuns',
    summary: 'List runs',
    description: 'The last runs of the tenant, newest first (`limit` of them: the history keeps the recent ones only, so there is no further page).',
    tags: RUNS,
    security,
    request: { params: tenantParams, query: runsQuery },
    responses: { 200: json(runListSchema, 'the last runs'), ...ofTenant },
  }),
  getRun: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/runs/{runId}',
    operationId: 'getRun',
    summary: 'Get a run',
    description: 'One run: state, outcome, timings, counts by entity and outcome, the dead letters it made; a run not started yet is answered from its job (queued or delayed).',
    tags: RUNS,
    security,
    request: { params: runParams },
    responses: { 200: json(runSchema, 'the run'), ...ofTenant, 404: problem('no such tenant (or not one of this key), or no such run') },
  }),
  listDeadLetters: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/dead-letters',
    operationId: 'listDeadLetters',
    summary: 'List dead letters',
    description: 'The records that could not be pushed, newest first, a page at a time: pass `next` as `cursor` until it is null. `replayable` says whether a replay can push one again (else its source needs fixing).',
    tags: DEAD_LETTERS,
    security,
    request: { params: tenantParams, query: deadLettersQuery },
    responses: { 200: json(deadLetterPageSchema, 'a page; `next` is the cursor of the following one'), ...ofTenant },
  }),
  replayDeadLetters: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/dead-letters/replay',
    operationId: 'replayDeadLetters',
    summary: 'Replay dead letters',
    description:
      'Queues a replay run: every dead letter kept with its record is pushed again, of every entity (it takes no body: one sent is refused with 422). Letters kept without their record cannot be replayed: the run counts them as `needsSourceFix` and ends `partial`.',
    tags: DEAD_LETTERS,
    security,
    request: { params: tenantParams, headers: idempotencyHeaders },
    responses: {
      202: json(runRequestedSchema, 'queued; follow it at links.run (also the Location header)', replayable),
      ...ofTenant,
      400: problem('a parameter or the Idempotency-Key did not validate'),
      409: problem('a request with this Idempotency-Key is under way'),
      422: problem('a body was sent (the replay takes none), or the Idempotency-Key was used for another request'),
    },
  }),
  createConnectLink: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/connect-links',
    operationId: 'createConnectLink',
    summary: 'Create a connect link',
    description:
      "A link for the customer to connect the tenant's Xero organisation or QuickBooks company; it works once (spent when it connects). The body is optional: none, an empty one or `{}` make a link of 7 days.",
    tags: LINKS,
    security,
    request: { params: tenantParams, headers: idempotencyHeaders, body: jsonBody(connectLinkRequestSchema, false) },
    responses: {
      201: json(connectLinkSchema, 'the link (send it to the customer); linkId revokes it', { 'Idempotent-Replayed': header('IdempotentReplayed') }),
      ...posted,
      409: problem('the tenant is not a Xero or QuickBooks one, it already has a connection and `reconnect` was not asked for, or a request with this Idempotency-Key is under way'),
      501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set'),
    },
  }),
  listConnectLinks: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/connect-links',
    operationId: 'listConnectLinks',
    summary: 'List connect links',
    description: 'The connect links of the tenant not yet used, revoked or expired: their ids and terms (a link itself is not kept).',
    tags: LINKS,
    security,
    request: { params: tenantParams },
    responses: { 200: json(outstandingLinksSchema, 'the outstanding links, oldest first'), ...ofTenant, 501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set') },
  }),
  revokeConnectLink: createRoute({
    method: 'delete',
    path: '/v1/tenants/{tenantId}/connect-links/{linkId}',
    operationId: 'revokeConnectLink',
    summary: 'Revoke a connect link',
    description: 'Revokes one outstanding connect link: opened afterwards, it gets the one 401.',
    tags: LINKS,
    security,
    request: { params: linkParams },
    responses: {
      204: answer('revoked'),
      ...ofTenant,
      404: problem('no such tenant (or not one of this key), or no such outstanding link (used, revoked, expired or never made)'),
      501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set'),
    },
  }),
  revokeConnection: createRoute({
    method: 'delete',
    path: '/v1/tenants/{tenantId}/connection',
    operationId: 'revokeConnection',
    summary: 'Revoke the connection',
    description:
      "Ends the tenant's connection: tells the platform (Xero, QuickBooks, Zoho Books) to revoke the grant, deletes the token chain and the binding, and revokes the tenant's outstanding connect links; a `connection.changed` event (`revoked`) follows. A platform that cannot be told does not keep the chain: it is deleted all the same, and `platform` says why it was not told. Runs then wait (`waiting`) until a new connect link is used. As `collections-sync connect revoke`.",
    tags: LINKS,
    security,
    request: { params: tenantParams },
    responses: {
      200: json(connectionRevokedSchema, 'revoked (or there was no connection: `chainDeleted` is false)'),
      ...ofTenant,
      409: problem('the tenant is not one of a platform connected with a link (`not-connectable`)'),
      501: problem('PLATFORM_TOKEN_KEY is not set: the token chain cannot be read to tell the platform'),
    },
  }),
  listEvents: createRoute({
    method: 'get',
    path: '/v1/events',
    operationId: 'listEvents',
    summary: 'List events',
    description: 'The events sent (or to be sent) to run-webhook receivers, oldest first (newest first with `order=newest`), under the ids they were sent with (`webhook-id`): catch up on what a receiver missed. Pass `next` as `after` until it is null; filter by `type` and `tenantId`. Kept EVENTS_KEEP_DAYS and at most EVENTS_KEEP_MAX.',
    tags: EVENTS,
    security,
    request: { query: eventsQuery },
    responses: {
      200: json(eventPageSchema, 'a page; `next` is the cursor of the following one (null: nothing newer yet)'),
      ...always,
      400: problem('a query parameter did not validate, or `after` is not a cursor this API gave nor the id of a kept event'),
    },
  }),
  getEvent: createRoute({
    method: 'get',
    path: '/v1/events/{eventId}',
    operationId: 'getEvent',
    summary: 'Get an event',
    description: 'One event of the event log, its payload as sent and the state of its delivery.',
    tags: EVENTS,
    security,
    request: { params: eventParams },
    responses: { 200: json(eventSchema, 'the event'), ...always, 404: problem('no such event kept (never sent, past EVENTS_KEEP_DAYS or EVENTS_KEEP_MAX), or one of a tenant this key may not see') },
  }),
  redeliverEvent: createRoute({
    method: 'post',
    path: '/v1/events/{eventId}/redeliver',
    operationId: 'redeliverEvent',
    summary: 'Redeliver an event',
    description: "Queues a delivery of the event again to its tenant's receiver: the same `webhook-id` (receivers dedupe on it), attempts of its own.",
    tags: EVENTS,
    security,
    request: { params: eventParams },
    responses: {
      202: json(redeliverySchema, 'queued'),
      ...always,
      404: problem('no such event kept, or one of a tenant this key may not see'),
      409: problem('the tenant has no receiver (notify.url or RUN_WEBHOOK_URL) to deliver to'),
    },
  }),
  testWebhook: createRoute({
    method: 'post',
    path: '/v1/webhooks/test',
    operationId: 'testWebhook',
    summary: 'Send a test event',
    description: "Sends a signed `webhook.test` event to a tenant's receiver now, once, and says how it went (not kept in the event log, not retried).",
    tags: EVENTS,
    security,
    request: { body: jsonBody(webhookTestRequestSchema) },
    responses: {
      200: json(webhookTestResultSchema, 'the attempt was made (`delivered` says whether the receiver took it)'),
      ...always,
      400: problem('the JSON did not validate'),
      404: problem('no such tenant, or one this key may not see'),
      409: problem('the tenant has no receiver (notify.url or RUN_WEBHOOK_URL)'),
      413: problem('the body is over 64 KiB'),
      415: problem('the body is not JSON'),
      422: problem('the body did not validate (`errors`)'),
    },
  }),
  openapi: createRoute({
    method: 'get',
    path: '/v1/openapi.json',
    operationId: 'openapi',
    summary: 'Get this document',
    description: 'The OpenAPI 3.1 document of this API, its `servers` naming this worker (PUBLIC_URL). Served without a key.',
    tags: ['Document'],
    security: [],
    responses: { 200: json(z.record(z.string(), z.unknown()), 'the OpenAPI 3.1 document'), 429: always[429] },
  }),
} as const;

/** The route templates (OpenAPI style), their methods and those of them that take a body, for the 404/405 answers, logs and metrics. */
export const TEMPLATES: readonly { template: string; pattern: RegExp; methods: readonly string[]; bodies: readonly string[] }[] = (() => {
  const by = new Map<string, Set<string>>();
  const bodies = new Map<string, Set<string>>();
  for (const r of Object.values(ROUTES)) {
    by.set(r.path, (by.get(r.path) ?? new Set()).add(r.method.toUpperCase()));
    if ('request' in r && 'body' in r.request) bodies.set(r.path, (bodies.get(r.path) ?? new Set()).add(r.method.toUpperCase()));
  }
  return [...by].map(([template, methods]) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    methods: [...methods],
    bodies: [...(bodies.get(template) ?? [])],
  }));
})();

export function templateOf(path: string): { template: string; methods: readonly string[]; bodies: readonly string[] } | undefined {
  return TEMPLATES.find((t) => t.pattern.test(path));
}
