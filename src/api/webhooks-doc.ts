/**
 * The OpenAPI document's `webhooks` (OpenAPI 3.1): one entry per event type a run-webhook receiver may get, its body
 * the payload built from the same zod schemas as the events themselves (src/notify/events.ts, `webhookPayloadSchema`),
 * its `data` the component GET /v1/events refers to as well (decision 0225).
 */
import { z, type OpenAPIHono } from '@hono/zod-openapi';
import { NOTIFY_EVENT_TYPES, webhookPayloadSchema, type NotifyEventType } from '../notify/events.js';
import { eventDataSchemas } from './schemas.js';

const SUMMARIES: Record<NotifyEventType, string> = {
  'run.finished': 'A sync run ended (any outcome): counts as the API has them, the dead letters it made, its first errors',
  'connection.changed': 'A platform connection was made, refused by the platform (needs_reconnect) or revoked',
  'tenant.created': 'A tenant was created over the API',
  'tenant.updated': 'A tenant was changed over the API (the top-level fields changed, never their values)',
  'tenant.deleted': 'A tenant was deleted over the API (sent to RUN_WEBHOOK_URL: its own notify.url went with it)',
  'webhook.test': 'A test asked for with POST /v1/webhooks/test',
};

const pascal = (type: string): string => type.split(/[._]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

const headers = z.object({
  'webhook-id': z.string().openapi({ param: { name: 'webhook-id', in: 'header' }, description: 'the event id, the same on every attempt and in GET /v1/events: dedupe on it', example: 'msg_5f0c2a9e41d84b7c9e3f2a1b0c9d8e7f' }),
  'webhook-timestamp': z.string().openapi({ param: { name: 'webhook-timestamp', in: 'header' }, description: "this attempt's time, Unix seconds", example: '1796461502' }),
  'webhook-signature': z.string().openapi({ param: { name: 'webhook-signature', in: 'header' }, description: '`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` under the secret (Standard Webhooks)' }),
});

export function registerWebhooks(registry: OpenAPIHono['openAPIRegistry']): void {
  for (const type of NOTIFY_EVENT_TYPES) {
    registry.registerWebhook({
      method: 'post',
      path: type,
      operationId: `webhook${pascal(type)}`,
      summary: SUMMARIES[type],
      description: `Sent to the tenant's receiver (notify.url, else RUN_WEBHOOK_URL), signed (webhook-signature) rather than authenticated: ${SUMMARIES[type]}.`,
      tags: ['Webhooks'],
      // The receiver checks the signature; no credential of the API is sent.
      security: [],
      request: {
        headers,
        body: { required: true, content: { 'application/json': { schema: webhookPayloadSchema(type, eventDataSchemas[type]).meta({ id: `${pascal(type)}Webhook` }) } } },
      },
      responses: {
        200: { description: 'any 2xx within NOTIFY_TIMEOUT_MS: delivered' },
        default: { description: 'anything else (a redirect, an error, a timeout): retried with back-off, up to NOTIFY_ATTEMPTS attempts' },
      },
    });
  }
}
