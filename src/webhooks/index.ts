/**
 * The webhook receiver (server.ts: the public server's routes and guards; events.ts: what is kept). It is composed
 * with the app's stores, queues, connect links and control API by the worker (src/worker/public-server.ts): this
 * room knows no app and no platform.
 */
export { WebhookEvents, findRequestMetadata, eventIdOf, type StoredEvent, type WebhookOutcome } from './events.js';
export { MAX_BODY_BYTES, startWebhookServer, type PlatformRoute, type WebhookServer, type WebhookServerOptions } from './server.js';
