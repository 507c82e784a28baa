/**
 * The control API's schemas: what the routes validate and answer, and what the OpenAPI document says (generated
 * from these, never written by hand). Times are ISO 8601 strings in UTC, ids strings, counts objects.
 */
import { z } from '@hono/zod-openapi';
import { ENTITIES, RUN_MODES } from '../glossary.js';
import { tenantSchema as tenantEntrySchema } from '../config/tenants.js';
import { EVENT_DELIVERY_STATES, LOGGED_EVENT_TYPES, NOTIFY_EVENT_TYPES, type LoggedEventType } from '../notify/event-types.js';
import { EVENT_DATA_SCHEMAS } from '../notify/events.js';
import { OAUTH_KINDS, PLATFORM_KINDS } from '../platforms/registry.js';
import { SINCE_RULE, SYNC_TRIGGERS } from '../glossary.js';
import { DEAD_LETTER_CODES } from '../state/dead-letters.js';
import { PROBLEM_TYPES } from './problem.js';

const iso = z.iso.datetime().openapi({ example: '2026-11-27T09:00:00.000Z' });
const tenantId = z.string().regex(/^[a-z][a-z0-9_-]{0,62}$/).openapi({ example: 'acme' });
const count = z.number().int().nonnegative();
const perEntity = <T extends z.ZodType>(t: T) => z.object({ contacts: t, invoices: t, payments: t });

/**
 * A body of these fields and no other: an unknown one is refused under its own name (the error hook in api.ts gives
 * each its path), and the message lists the fields there are.
 */
const closed = <S extends z.ZodRawShape>(shape: S) =>
  z.strictObject(shape, { error: (iss) => (iss.code === 'unrecognized_keys' ? `is not a field of this body (its fields: ${Object.keys(shape).join(', ')})` : undefined) });
/** A query's `limit`: one message, naming the field and the form, whatever is wrong with it (`abc`, 0, 1.5, 1000). */
const limitParam = (max: number, fallback: number) => {
  const message = `limit must be an integer from 1 to ${max}`;
  return z.coerce
    .number({ error: message })
    .int(message)
    .min(1, message)
    .max(max, message)
    .default(fallback)
    .openapi({ param: { name: 'limit', in: 'query' }, example: fallback, description: `how many items a page holds (1-${max}, default ${fallback})` });
};

export const problemSchema = z
  .object({
    type: z.enum(PROBLEM_TYPES).openapi({ description: '`about:blank` (the status says it all), or `tag:collections-sync,2026:problem/<slug>` (docs/api.md lists them)' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z
      .array(z.object({ in: z.enum(['body', 'query', 'path', 'header']), path: z.array(z.union([z.string(), z.number().int()])), message: z.string() }))
      .optional()
      .openapi({ description: 'What did not validate (422, 400)' }),
  })
  .openapi('Problem', { description: 'RFC 9457 problem details' });

/** The last outgoing event (webhook) of a tenant and how its delivery went. */
export const lastDeliverySchema = z
  .object({
    eventId: z.string(),
    type: z.enum(NOTIFY_EVENT_TYPES),
    state: z.enum(['delivered', 'retrying', 'failed']),
    attempts: z.number().int().nonnegative(),
    statusCode: z.number().int().optional(),
    error: z.string().optional(),
    at: iso,
  })
  .openapi('LastDelivery');
export type LastDelivery = z.infer<typeof lastDeliverySchema>;

export const runStateSchema = z.enum(['queued', 'delayed', 'running', 'finished']).openapi({ description: 'queued or delayed: not started yet (the job waits); running; finished (see outcome)' });
export const runOutcomeSchema = z.enum(['succeeded', 'partial', 'failed', 'waiting']).openapi({ description: 'partial: some records dead-lettered; waiting: the platform is not connected yet' });

export const runSummarySchema = z
  .object({
    runId: z.string().openapi({ example: 'run-42' }),
    mode: z.enum(RUN_MODES),
    trigger: z.enum(SYNC_TRIGGERS).nullable().openapi({ description: 'who asked for the run (external: a job added by code outside collections-sync)' }),
    state: runStateSchema,
    outcome: runOutcomeSchema.nullable(),
    requestedAt: iso.nullable(),
    startedAt: iso.nullable(),
    finishedAt: iso.nullable(),
    totals: z.record(z.string(), z.number().int()).openapi({ description: 'records by outcome over every entity (created, updated, skipped, deadLettered, ...); byEntity in the run itself', example: { created: 12, deadLettered: 1 } }),
    errorCount: z.number().int().nonnegative().openapi({ description: 'errors the run recorded (the run itself lists them)' }),
    firstError: z.string().nullable().openapi({ description: 'the first of them, or null' }),
  })
  .openapi('RunSummary');

export const deadLetterSchema = z
  .object({
    key: z.string().openapi({ example: 'contacts:id:C-17' }),
    entity: z.enum(ENTITIES),
    platformId: z.string().optional(),
    place: z.string().optional().openapi({ description: 'where a record without an id was found (file:line, page)' }),
    reason: z.string(),
    code: z.enum(DEAD_LETTER_CODES).openapi({ description: 'why: COLLECTIONS_REJECTED the service refused it (422, see detail), COLLECTIONS_HTTP another 4xx, MAPPING_REJECTED the mapping refused it, CONTACT_NOT_MAPPED its contact never arrived, UNSETTLED its write stayed unsettled, BAD_RECORD the platform gave a record that could not be read' }),
    detail: z.unknown().optional().openapi({ description: "the service's 422 detail, when it refused the record" }),
    runId: z.string().openapi({ description: 'the last run that tried the record: `lastRunId`, kept for clients written before it', deprecated: true }),
    firstRunId: z.string().openapi({ description: 'the run that made this dead letter (it stays however often later runs try the record)' }),
    lastRunId: z.string().openapi({ description: 'the last run that tried the record (the one `at` is of)' }),
    attempts: count,
    firstAt: iso,
    at: iso,
    replayable: z.boolean().openapi({ description: 'kept with its record: a replay pushes it again (else the source needs fixing)' }),
  })
  .openapi('DeadLetter');

/** What a run's `phase` says (the worker writes the entity it pushes, or the limit that rescheduled it: jobs/sync/processor.ts). */
export const RUN_PHASES = [...ENTITIES, ...(['minute', 'day', 'concurrent', 'app'] as const).map((scope) => `rescheduled: platform ${scope} limit` as const)] as const;

const countsSchema = z.record(z.string(), z.number().int());

export const runSchema = runSummarySchema
  .extend({
    tenantId,
    phase: z.enum(RUN_PHASES).nullable().openapi({ description: 'a running run: the entity it pushes (written at most once a second); a run a platform limit stopped: rescheduled until the limit frees' }),
    lastProgressAt: iso.nullable().openapi({ description: 'running: when the run last made progress (a record decided, a request answered, a page read), as the stall watchdog saw it' }),
    waitingOn: z.string().nullable().openapi({ description: 'running and quiet for a while: where the run waits (its waits by kind, request slots, window)' }),
    stalls: z
      .object({ count: count, lastAt: iso, lastReason: z.string() })
      .nullable()
      .openapi({ description: 'attempts of this run the stall watchdog ended (no progress within RUN_STALL_S); each was retried from the checkpoint' }),
    durationMs: z.number().int().nonnegative().nullable(),
    counts: z.object({ total: countsSchema, byEntity: perEntity(countsSchema) }).openapi({ description: 'records by outcome (created, updated, skipped, deadLettered, ...), in all and per entity; while the run runs, as of at most a second ago (its finish writes the final counts)' }),
    errors: z.array(z.string()),
    errorsOmitted: count,
    deadLetters: z.object({ items: z.array(deadLetterSchema), more: z.boolean() }).openapi({ description: 'the dead letters this run made that are still there (at most 100)' }),
  })
  .openapi('Run');

export const connectionSchema = z
  .object({
    state: z.enum(['connected', 'awaiting_connection', 'needs_reconnect']),
    connection: z.string().optional().openapi({ description: 'the Xero organisation or QuickBooks realm' }),
    name: z.string().optional(),
    via: z.enum(['link', 'tenants file']).optional(),
    connectedAt: iso.optional(),
    refreshedAt: iso.optional(),
    refreshTokenAgeDays: count.optional(),
    ageing: z.boolean().optional(),
    reason: z.string().optional(),
  })
  .openapi('Connection');

const cursorSchema = z.object({ updatedAt: z.string(), id: z.string() }).nullable();

/** The schedule a tenant runs on, defaults applied (its `settings` hold what was written, which may leave them out). */
export const tenantScheduleSchema = z
  .object({
    everyMs: count.nullable().openapi({ description: 'incremental runs every this many ms (the default, 15 minutes, when the entry gives neither `every` nor `cron`); null: on `cron`', example: 900000 }),
    cron: z.string().nullable().openapi({ description: 'incremental runs on this cron pattern (in `tz`); null: on `everyMs`' }),
    tz: z.string().nullable().openapi({ description: 'the time zone of `cron` (null: UTC)' }),
    reconcileEveryMs: count.openapi({ description: 'the reconcile pass (every open invoice) runs every this many ms', example: 86400000 }),
  })
  .openapi('TenantSchedule', { description: 'when the tenant is synced, as its schedulers are written (defaults applied)' });

export const tenantSchema = z
  .object({
    id: tenantId,
    source: z.enum(['file', 'api']).openapi({ description: 'file: a tenant of the tenants file (read-only over the API); api: created over the API' }),
    platform: z.enum(PLATFORM_KINDS),
    settings: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'the tenant\'s entry without its secrets: for an api tenant as it was sent (what a merge patch applies to), for a file tenant as the file gives it once read (defaults filled in, durations in ms)' }),
    secretsSet: z.array(z.string()).openapi({ description: 'the secret fields that are set, as dotted paths (`collections.clientSecret`); their values are never answered', example: ['collections.clientSecret'] }),
    connection: connectionSchema.nullable().openapi({ description: `tenants of a platform connected with a link only (${OAUTH_KINDS.join(', ')})` }),
    running: z.boolean().openapi({ description: 'a run holds the tenant now' }),
    lastRun: runSummarySchema.nullable(),
    cursors: perEntity(cursorSchema).openapi({ description: 'where the next incremental run reads from (null: it reads everything)' }),
    deadLetters: z.object({ total: count, byEntity: perEntity(count) }),
    pendingInvoices: count.openapi({ description: 'invoices waiting for their contact' }),
    lastWebhook: lastDeliverySchema.nullable().openapi({ description: 'the last outgoing event and its delivery (null: none)' }),
    schedule: tenantScheduleSchema,
    nextRunAt: iso
      .nullable()
      .openapi({ description: "when the tenant's next scheduled run is due: the earliest next tick of its schedulers (incremental and reconcile); null: none is in place (a worker writes them at its start and when the tenants change)" }),
  })
  .openapi('Tenant');

export const tenantListSchema = z
  .object({ items: z.array(tenantSchema), next: z.string().nullable().openapi({ description: 'pass as `cursor` for the next page; null: the last page' }) })
  .openapi('TenantList');

/**
 * The body of `POST /v1/tenants`: an entry of the tenants file, the very schema the file is read with
 * (src/config/tenants.ts), except that `${VAR}` references are refused (the API takes values, not the worker's environment).
 */
// zod's own `.meta` (its id names the component): a schema made in another module may predate @hono/zod-openapi's
// extension of zod (in the built CLI bundle too), so `.openapi` is not called on it.
export const tenantCreateSchema = tenantEntrySchema.meta({ id: 'TenantEntry', description: 'an entry of the tenants file (docs/connecting.md); `${VAR}` references are refused' });

/** A JSON merge patch (RFC 7396) of a tenant's entry: members to set, `null` to remove one. */
export const tenantPatchSchema = z
  .record(z.string(), z.unknown())
  .openapi('TenantPatch', { description: 'a JSON merge patch (RFC 7396) of the entry: a member replaces, an object merges, null removes; the result must be a valid entry with the same id' });
export const runListSchema = z.object({ items: z.array(runSummarySchema) }).openapi('RunList');
export const deadLetterPageSchema = z
  .object({ items: z.array(deadLetterSchema), next: z.string().nullable().openapi({ description: 'pass as `cursor` for the next (older) page; null: the last page' }) })
  .openapi('DeadLetterPage');

export const runRequestSchema = closed({
  mode: z.enum(['incremental', 'full', 'reconcile'], { error: 'mode must be one of incremental, full, reconcile' }),
  since: z.iso.date({ error: 'since must be a date, YYYY-MM-DD' }).optional().openapi({ description: 'with mode full: only records updated on or after this date (YYYY-MM-DD)', example: '2026-01-01' }),
})
  .refine(SINCE_RULE.holds, { message: SINCE_RULE.message, path: [...SINCE_RULE.path] })
  .openapi('RunRequest');

export const runRequestedSchema = z
  .object({
    runId: z.string(),
    jobId: z.string(),
    tenantId,
    mode: z.enum(RUN_MODES),
    requestedAt: iso,
    deduplicated: z.boolean().openapi({ description: 'true: a run of this mode was already queued and this request joined it' }),
    links: z.object({ run: z.string().openapi({ example: '/v1/tenants/acme/runs/run-42' }) }),
  })
  .openapi('RunRequested');

export const connectLinkRequestSchema = closed({
    expires: z.string({ error: 'expires must be a duration up to 30d, such as 2h or 7d' }).regex(/^(\d+(ms|s|m|h|d))+$/, 'expires must be a duration up to 30d, such as 2h or 7d').optional().openapi({ description: 'how long the link works (default 7d, at most 30d)', example: '7d' }),
    reconnect: z
      .boolean({ error: 'reconnect must be true or false' })
      .optional()
      .openapi({ description: 'a link that may replace the connection the tenant has (another organisation included); without it a tenant that has one is refused (409 already-connected)' }),
  }).openapi('ConnectLinkRequest');

const linkId = z.string().openapi({ description: 'the link id: names it to revoke it (not a secret; the link itself is)', example: 'Xq3b_2KfLw9Z' });

export const connectLinkSchema = z
  .object({
    tenantId,
    linkId,
    url: z.url(),
    expiresAt: iso,
    reconnect: z.boolean(),
    redirectUri: z.url().openapi({ description: "register it as the platform app's redirect URI" }),
  })
  .openapi('ConnectLink');

export const outstandingLinkSchema = z
  .object({ linkId, expiresAt: iso, reconnect: z.boolean(), createdAt: iso, by: z.string().openapi({ description: '`cli`, or `api:<key name>`' }) })
  .openapi('OutstandingConnectLink', { description: 'a link made and not yet used, revoked or expired (its URL is not kept)' });
export const outstandingLinksSchema = z.object({ items: z.array(outstandingLinkSchema) }).openapi('OutstandingConnectLinks');

export const tenantParams = z.object({ tenantId: z.string().openapi({ param: { name: 'tenantId', in: 'path' }, example: 'acme' }) });
export const linkParams = tenantParams.extend({ linkId: z.string().openapi({ param: { name: 'linkId', in: 'path' }, example: 'Xq3b_2KfLw9Z' }) });
export const runParams = tenantParams.extend({ runId: z.string().openapi({ param: { name: 'runId', in: 'path' }, example: 'run-42' }) });
export const runsQuery = z.object({ limit: limitParam(100, 20) });
export const deadLettersQuery = z.object({
  entity: z.enum(ENTITIES).optional().openapi({ param: { name: 'entity', in: 'query' } }),
  limit: limitParam(500, 50),
  cursor: z.string().max(8192).optional().openapi({ param: { name: 'cursor', in: 'query' }, description: 'the `next` of the previous page' }),
});
/** What `GET /v1/tenants?state=` selects (api.ts `inState`). */
export const TENANT_STATES = ['connected', 'needs_reconnect', 'awaiting_connection', 'failing', 'partial', 'waiting', 'running'] as const;
export type TenantState = (typeof TENANT_STATES)[number];
export const tenantsQuery = z.object({
  limit: limitParam(100, 50),
  cursor: z.string().max(512).optional().openapi({ param: { name: 'cursor', in: 'query' }, description: 'the `next` of the previous page (of the same `q` and `state`)' }),
  q: z
    .string({ error: 'q must be text of at most 100 characters' })
    .max(100, 'q must be text of at most 100 characters')
    .optional()
    .openapi({
      param: { name: 'q', in: 'query' },
      example: 'acme',
      description:
        "only tenants whose id holds this text, case-insensitively, or whose connection's organisation (company) name does (`connection.name`, a tenant connected with a link); at most 100 characters; empty or blank: no filter",
    }),
  state: z
    .enum(TENANT_STATES, { error: `state must be one of ${TENANT_STATES.join(', ')}` })
    .optional()
    .openapi({
      param: { name: 'state', in: 'query' },
      description:
        'only tenants in this state, as their view shows it: `connected`, `needs_reconnect`, `awaiting_connection`: `connection.state` is that (a tenant without a `connection` is in none of them); `failing`: `lastRun.outcome` is `failed`; `partial`: `lastRun.outcome` is `partial` or `deadLetters.total` is over 0; `waiting`: `lastRun.outcome` is `waiting`, or `connection.state` is `awaiting_connection`; `running`: `running` is true. `lastRun` is the newest run: a tenant whose newest run is under way has no outcome (it is `running`, not `failing`)',
    }),
});
export const ifMatchHeaders = z.object({
  'if-match': z.string().max(1024).optional().openapi({ param: { name: 'if-match', in: 'header' }, description: 'the ETag of the tenant as read: a tenant changed since is not patched (412)' }),
});
export const idempotencyHeaders = z.object({
  'idempotency-key': z.string().max(255).optional().openapi({ param: { name: 'idempotency-key', in: 'header' }, description: 'a retry with the same key gets the first answer again (24 h)' }),
});

/**
 * Events (`GET /v1/events`, and the document's `webhooks`): each type's `data` is the schema the worker builds the
 * event with (src/notify/events.ts), named here once so the list and the webhooks refer to one component each
 * (clones, as the tenants' schema above: made before zod was extended, they have no `.openapi`).
 */
export const eventDataSchemas = {
  'run.finished': EVENT_DATA_SCHEMAS['run.finished'].meta({ id: 'RunFinishedData', description: 'a sync run ended, whatever its outcome' }),
  'connection.changed': EVENT_DATA_SCHEMAS['connection.changed'].meta({ id: 'ConnectionChangedData', description: 'a Xero, QuickBooks or Zoho Books connection was made, refused by the platform or revoked' }),
  'tenant.created': EVENT_DATA_SCHEMAS['tenant.created'].meta({ id: 'TenantCreatedData', description: 'a tenant was created over the API' }),
  'tenant.updated': EVENT_DATA_SCHEMAS['tenant.updated'].meta({ id: 'TenantUpdatedData', description: 'a tenant was changed over the API: the top-level fields changed, never their values' }),
  'tenant.deleted': EVENT_DATA_SCHEMAS['tenant.deleted'].meta({ id: 'TenantDeletedData', description: 'a tenant was deleted over the API' }),
  'webhook.test': EVENT_DATA_SCHEMAS['webhook.test'].meta({ id: 'WebhookTestData', description: 'a test asked for with POST /v1/webhooks/test (never in the event log)' }),
} as const;

export const eventDeliveryViewSchema = z
  .object({
    state: z.enum(EVENT_DELIVERY_STATES).openapi({ description: 'pending: queued; delivered: a 2xx answer; retrying: failed, retried with back-off; failed: given up; no_receiver: none was configured when it happened' }),
    attempts: count.openapi({ description: 'attempts of the last delivery (a redelivery counts from 1 again)' }),
    statusCode: z.number().int().optional().openapi({ description: "the receiver's answer to the last attempt" }),
    error: z.string().optional().openapi({ description: 'why the last attempt failed: `http 503`, `refused`, `timeout`, `tls`, `dns`, `reset`, `unreachable`, `blocked address`, `error`' }),
    at: iso.openapi({ description: 'when this state was written' }),
  })
  .openapi('EventDelivery');

const eventId = z.string().openapi({ description: 'the `webhook-id` the event is (was) sent under', example: 'msg_5f0c2a9e41d84b7c9e3f2a1b0c9d8e7f' });
const loggedEvent = <T extends LoggedEventType>(type: T) =>
  z.object({
    id: eventId,
    type: z.literal(type),
    timestamp: iso.openapi({ description: 'when it happened (the payload\'s `timestamp`)' }),
    tenantId,
    data: eventDataSchemas[type],
    delivery: eventDeliveryViewSchema,
  });

export const eventSchema = z
  .discriminatedUnion('type', [loggedEvent('run.finished'), loggedEvent('connection.changed'), loggedEvent('tenant.created'), loggedEvent('tenant.updated'), loggedEvent('tenant.deleted')])
  .openapi('Event', { description: 'an event as it is (was) sent to the receiver (`type`, `timestamp`, `data`), with its id, tenant and delivery' });

export const eventPageSchema = z
  .object({
    items: z.array(eventSchema),
    next: z.string().nullable().openapi({ description: 'pass as `after` for the following (newer) page; null: nothing newer yet (to poll, pass the last `id` you handled as `after`)' }),
  })
  .openapi('EventPage');

export const eventsQuery = z.object({
  after: z
    .string()
    .max(512)
    .optional()
    .openapi({ param: { name: 'after', in: 'query' }, description: 'the `next` of the previous page, or an event id (`webhook-id`): the events recorded after it' }),
  limit: z.coerce.number().int().min(1).max(100).default(50).openapi({ param: { name: 'limit', in: 'query' }, example: 50 }),
  type: z.enum(LOGGED_EVENT_TYPES).optional().openapi({ param: { name: 'type', in: 'query' }, description: 'only events of this type' }),
  tenantId: z.string().max(64).optional().openapi({ param: { name: 'tenantId', in: 'query' }, description: 'only events of this tenant' }),
  order: z
    .enum(['oldest', 'newest'], { error: 'order must be oldest or newest' })
    .default('oldest')
    .openapi({ param: { name: 'order', in: 'query' }, description: 'oldest first (catching up: the default), or newest first (the latest deliveries); `after` is then the `next` of the previous page or an event id, and the page holds the events recorded before it' }),
});
export const eventParams = z.object({ eventId: z.string().max(64).openapi({ param: { name: 'eventId', in: 'path' }, example: 'msg_5f0c2a9e41d84b7c9e3f2a1b0c9d8e7f' }) });

export const redeliverySchema = z
  .object({
    id: eventId,
    tenantId,
    redelivery: z
      .enum(['queued', 'promoted', 'already queued'])
      .openapi({ description: 'queued: a new delivery (NOTIFY_ATTEMPTS attempts); promoted: the delivery waiting its back-off goes now; already queued: one is waiting or under way' }),
  })
  .openapi('EventRedelivery');

export const connectionRevokedSchema = z
  .object({
    tenantId,
    connection: z.string().nullable().openapi({ description: 'the Xero organisation, QuickBooks realm or Zoho Books organization that was connected (null: none was)' }),
    platform: z.string().openapi({ description: 'what the platform said: `revoked`, `not connected` (nothing to revoke), or `not told: <why>` (the chain is deleted all the same)', example: 'revoked' }),
    chainDeleted: z.boolean().openapi({ description: 'the token chain and the binding were deleted (false: there was no connection)' }),
    linksRevoked: count.openapi({ description: 'outstanding connect links of the tenant revoked with it' }),
  })
  .openapi('ConnectionRevoked', { description: 'the outcome of revoking a connection: the same as `collections-sync connect revoke --json`' });

export const webhookTestRequestSchema = z.strictObject({ tenantId: z.string().max(64).openapi({ example: 'acme' }) }).openapi('WebhookTestRequest');
export const webhookTestResultSchema = z
  .object({
    eventId,
    tenantId,
    delivered: z.boolean().openapi({ description: 'the receiver answered 2xx' }),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable().openapi({ description: 'why it was not delivered (a class, as EventDelivery.error)' }),
    durationMs: count,
  })
  .openapi('WebhookTestResult', { description: 'one signed attempt of a `webhook.test` event, made while the request waited (not retried, not in the event log)' });
