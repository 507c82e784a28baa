/**
 * The worker's ops port: `/healthz` (the process is up), `/readyz` (Redis reachable and workers not wedged),
 * `/metrics` (Prometheus text). Binds 0.0.0.0 in the container, 127.0.0.1 by default elsewhere.
 */
import type { Server } from 'node:http';
import { createBoundedServer, listen, type ServerLimits } from '../http-server.js';
import type { Registry } from 'prom-client';

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export interface OpsServerOptions {
  port: number;
  host?: string;
  registry: Registry;
  readiness: () => Promise<Readiness>;
  /** Refreshes gauges (queue depth, cursor lag) before a scrape. */
  beforeScrape?: () => Promise<void>;
  /** Connection bounds (SERVER_*: slow headers are cut at the headers timeout); default DEFAULT_SERVER_LIMITS. */
  limits?: ServerLimits;
}

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createBoundedServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    void (async () => {
      try {
        if (path === '/healthz') return send(200, 'application/json', JSON.stringify({ ok: true }));
        if (path === '/readyz') {
          const r = await options.readiness();
          return send(r.ready ? 200 : 503, 'application/json', JSON.stringify(r));
        }
        if (path === '/metrics') {
          await options.beforeScrape?.().catch(() => undefined);
          return send(200, options.registry.contentType, await options.registry.metrics());
        }
        return send(404, 'application/json', JSON.stringify({ detail: 'not found' }));
      } catch (err) {
        return send(500, 'application/json', JSON.stringify({ detail: (err as Error).message }));
      }
    })();
  }, options.limits);
  return listen(server, options.port, options.host ?? '127.0.0.1');
}
