/**
 * The names of the run webhooks' events and of their deliveries' states, apart from their schemas (events.ts): what
 * the stores and the API's enums need, without loading the schemas (and the tenants' schema they are built on).
 */

/** Every event a receiver may get: those of the event log, and `webhook.test` (sent when asked, never logged). */
export const NOTIFY_EVENT_TYPES = ['run.finished', 'connection.changed', 'tenant.created', 'tenant.updated', 'tenant.deleted', 'webhook.test'] as const;
export type NotifyEventType = (typeof NOTIFY_EVENT_TYPES)[number];
/** The events kept in the event log (`GET /v1/events`): all but `webhook.test`. */
export const LOGGED_EVENT_TYPES = ['run.finished', 'connection.changed', 'tenant.created', 'tenant.updated', 'tenant.deleted'] as const satisfies readonly NotifyEventType[];
export type LoggedEventType = (typeof LOGGED_EVENT_TYPES)[number];

/**
 * An event's delivery as the event log keeps it: pending (queued, no attempt yet), delivered (a 2xx answer),
 * retrying (failed, another attempt is planned), failed (given up), no_receiver (none configured when it happened).
 */
export const EVENT_DELIVERY_STATES = ['pending', 'delivered', 'retrying', 'failed', 'no_receiver'] as const;
