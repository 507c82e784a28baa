/**
 * The routes of the control API, as data: path, method, parameters, body and every answer (the OpenAPI document is
 * generated from these). Handlers are in api.ts.
 */
import { createRoute, z } from '@hono/zod-openapi';
import {
  connectLinkRequestSchema,
  connectLinkSchema,
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

const problem = (description: string) => ({ description, content: { [PROBLEM_TYPE]: { schema: problemSchema } } });
const json = <T>(schema: T, description: string) => ({ description, content: { 'application/json': { schema } } });
const security = [{ apiKey: [] }];

/** Every route answers these. */
const always = {
  401: problem('no valid API key: the public server\'s one answer to every unauthenticated request'),
  429: problem('over API_RATE_PER_MIN requests of this key in a minute; Retry-After says when to try again'),
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
const jsonBody = <T>(schema: T) => ({ required: true, content: { 'application/json': { schema } } });
const etag = { ETag: { schema: { type: 'string' as const }, description: 'the version of the tenant: send it as If-Match to patch this version only' } };

export const ROUTES = {
  listTenants: createRoute({
    method: 'get',
    path: '/v1/tenants',
    operationId: 'listTenants',
    summary: 'Every tenant (of this key) with its settings, platform, connection, last run, cursors, dead letters and pending invoices, a page at a time (by id)',
    security,
    request: { query: tenantsQuery },
    responses: { 200: json(tenantListSchema, 'a page; `next` is the cursor of the following one'), ...always, 400: problem('a query parameter did not validate, or the cursor is not one this API gave') },
  }),
  createTenant: createRoute({
    method: 'post',
    path: '/v1/tenants',
    operationId: 'createTenant',
    summary: 'Creates a tenant from an entry of the tenants file (its secrets sealed under PLATFORM_TOKEN_KEY, never answered)',
    security,
    request: { body: jsonBody(tenantCreateSchema) },
    responses: {
      201: { ...json(tenantSchema, 'created; the Location header names it'), headers: { Location: { schema: { type: 'string' } }, ...etag } },
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
    summary: 'One tenant, as in the list: what a page about one customer needs ("last synced 3 minutes ago")',
    security,
    request: { params: tenantParams },
    responses: { 200: { ...json(tenantSchema, 'the tenant'), headers: etag }, ...ofTenant },
  }),
  patchTenant: createRoute({
    method: 'patch',
    path: '/v1/tenants/{tenantId}',
    operationId: 'patchTenant',
    summary: 'Changes a tenant created over the API with a JSON merge patch (RFC 7396) of its entry',
    security,
    request: { params: tenantParams, headers: ifMatchHeaders, body: { required: true, content: { 'application/merge-patch+json': { schema: tenantPatchSchema } } } },
    responses: {
      200: { ...json(tenantSchema, 'the tenant as patched'), headers: etag },
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
    summary: 'Removes a tenant created over the API: no new run starts (one under way ends as it would); its state is kept for TENANT_STATE_RETENTION_DAYS, or purged at once with purge=true',
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
      204: { description: 'removed' },
      ...ofTenant,
      403: problem('this key is limited to some tenants: it cannot delete tenants'),
      409: problem('a tenant of the tenants file: read-only over the API'),
    },
  }),
  requestRun: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/runs',
    operationId: 'requestRun',
    summary: 'Requests a run (one queued run per tenant and mode: a repeat joins it)',
    security,
    request: { params: tenantParams, headers: idempotencyHeaders, body: jsonBody(runRequestSchema) },
    responses: {
      202: { ...json(runRequestedSchema, 'queued; follow it at links.run (also the Location header)'), headers: { Location: { schema: { type: 'string' } } } },
      ...posted,
    },
  }),
  listRuns: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/runs',
    operationId: 'listRuns',
    summary: 'The run history, newest first',
    security,
    request: { params: tenantParams, query: runsQuery },
    responses: { 200: json(runListSchema, 'the last runs'), ...ofTenant },
  }),
  getRun: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/runs/{runId}',
    operationId: 'getRun',
    summary: 'One run: state, outcome, timings, counts by entity and outcome, the dead letters it made (a run not started yet: its job)',
    security,
    request: { params: runParams },
    responses: { 200: json(runSchema, 'the run'), ...ofTenant, 404: problem('no such tenant (or not one of this key), or no such run') },
  }),
  listDeadLetters: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/dead-letters',
    operationId: 'listDeadLetters',
    summary: 'Dead letters, newest first, a page at a time',
    security,
    request: { params: tenantParams, query: deadLettersQuery },
    responses: { 200: json(deadLetterPageSchema, 'a page; `next` is the cursor of the following one'), ...ofTenant },
  }),
  replayDeadLetters: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/dead-letters/replay',
    operationId: 'replayDeadLetters',
    summary: 'Requests a replay run: every dead letter kept with its record is pushed again',
    security,
    request: { params: tenantParams, headers: idempotencyHeaders },
    responses: {
      202: { ...json(runRequestedSchema, 'queued; follow it at links.run (also the Location header)'), headers: { Location: { schema: { type: 'string' } } } },
      ...posted,
    },
  }),
  createConnectLink: createRoute({
    method: 'post',
    path: '/v1/tenants/{tenantId}/connect-links',
    operationId: 'createConnectLink',
    summary: "A connect link for the customer to connect the tenant's Xero organisation or QuickBooks company (it works once: spent when it connects)",
    security,
    request: { params: tenantParams, headers: idempotencyHeaders, body: jsonBody(connectLinkRequestSchema) },
    responses: {
      201: json(connectLinkSchema, 'the link (send it to the customer); linkId revokes it'),
      ...posted,
      409: problem('the tenant is not a Xero or QuickBooks one, it already has a connection and `reconnect` was not asked for, or a request with this Idempotency-Key is under way'),
      501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set'),
    },
  }),
  listConnectLinks: createRoute({
    method: 'get',
    path: '/v1/tenants/{tenantId}/connect-links',
    operationId: 'listConnectLinks',
    summary: 'The connect links of the tenant not yet used, revoked or expired (their ids and terms; a link itself is not kept)',
    security,
    request: { params: tenantParams },
    responses: { 200: json(outstandingLinksSchema, 'the outstanding links, oldest first'), ...ofTenant, 501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set') },
  }),
  revokeConnectLink: createRoute({
    method: 'delete',
    path: '/v1/tenants/{tenantId}/connect-links/{linkId}',
    operationId: 'revokeConnectLink',
    summary: 'Revokes one outstanding connect link: opened afterwards, it gets the one 401',
    security,
    request: { params: linkParams },
    responses: {
      204: { description: 'revoked' },
      ...ofTenant,
      404: problem('no such tenant (or not one of this key), or no such outstanding link (used, revoked, expired or never made)'),
      501: problem('connect links are off: PUBLIC_URL and PLATFORM_TOKEN_KEY are not both set'),
    },
  }),
  listEvents: createRoute({
    method: 'get',
    path: '/v1/events',
    operationId: 'listEvents',
    summary: 'The events sent (or to be sent) to run-webhook receivers, oldest first, under the ids they were sent with: catch up on what a receiver missed',
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
    summary: 'One event of the event log, with its delivery',
    security,
    request: { params: eventParams },
    responses: { 200: json(eventSchema, 'the event'), ...always, 404: problem('no such event kept (never sent, past EVENTS_KEEP_DAYS or EVENTS_KEEP_MAX), or one of a tenant this key may not see') },
  }),
  redeliverEvent: createRoute({
    method: 'post',
    path: '/v1/events/{eventId}/redeliver',
    operationId: 'redeliverEvent',
    summary: "Queues a delivery of the event again to its tenant's receiver: the same webhook-id, new attempts",
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
    summary: "Sends a signed `webhook.test` event to a tenant's receiver now and says how it went",
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
    summary: 'This document',
    security,
    responses: { 200: json(z.record(z.string(), z.unknown()), 'the OpenAPI 3.1 document'), ...always },
  }),
} as const;

/** The route templates (OpenAPI style) and their methods, for the 404/405 answers, logs and metrics. */
export const TEMPLATES: readonly { template: string; pattern: RegExp; methods: readonly string[] }[] = (() => {
  const by = new Map<string, Set<string>>();
  for (const r of Object.values(ROUTES)) by.set(r.path, (by.get(r.path) ?? new Set()).add(r.method.toUpperCase()));
  return [...by].map(([template, methods]) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    methods: [...methods],
  }));
})();

export function templateOf(path: string): { template: string; methods: readonly string[] } | undefined {
  return TEMPLATES.find((t) => t.pattern.test(path));
}
