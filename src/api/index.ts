/**
 * The control API room (issue 31): `/v1` on the public server (src/webhooks mounts it when API_KEYS is set), the
 * OpenAPI document generated from its routes, problem details, API keys, rate limit and idempotency. It calls the
 * same producers and stores as the CLI; it never runs a sync itself.
 */
import type { Hono } from 'hono';
import { apiApp, type ApiDeps } from './api.js';

export { apiApp, openApiDocument, DOCUMENT_CONFIG, MAX_API_BODY_BYTES, type ApiDeps } from './api.js';
export { lastDeliverySchema, type LastDelivery } from './schemas.js';
export { PROBLEM_TYPE } from './problem.js';

/**
 * Adds `/v1` to the public server's app; `unauthorized` is that server's one 401. Gives the API's own fetch: the
 * console (src/console) reads and acts through it, in process.
 */
export function mountApi<E extends object>(app: Hono<E & { Bindings: object }>, deps: ApiDeps, unauthorized: () => Response): (request: Request) => Response | Promise<Response> {
  const api = apiApp(deps, unauthorized);
  app.route('/', api as never);
  return (request) => api.request(request);
}
