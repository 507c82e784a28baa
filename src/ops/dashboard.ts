/**
 * The job dashboard: bull-board over the worker's queues, read-only (no retry, pause, clean or remove, in
 * bull-board and again here: only GET and HEAD pass), behind HTTP basic auth. `/healthz` answers without auth,
 * for container health checks. Job data holds ids only; values under secret-like keys are hidden anyway.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { listen } from '../http-server.js';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { getRequestListener } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import { basicAuth } from 'hono/basic-auth';
import { HTTPException } from 'hono/http-exception';
import type { Secret } from '../config/secret.js';
import type { Logger } from '../logger.js';

export interface DashboardOptions {
  queues: readonly Queue[];
  port: number;
  /** Default 127.0.0.1 (0.0.0.0 in the container). */
  host?: string;
  username: string;
  password: Secret;
  title?: string;
  logger?: Logger;
}

export interface Dashboard {
  port: number;
  url: string;
  close(): Promise<void>;
}

const SECRET_KEY = /secret|token|password|authori[sz]ation|api[-_]?key/i;

/** Copies job data with the values of secret-like keys replaced (defence in depth: job data holds ids only). */
export function hideSecrets(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => hideSecrets(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_KEY.test(k) ? '[hidden]' : hideSecrets(v, depth + 1)]),
  );
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Compares credentials in constant time (both sides hashed to equal lengths first). */
function sameCredentials(username: string, password: string, wantUser: string, wantPassword: Secret): boolean {
  const userOk = timingSafeEqual(digest(username), digest(wantUser));
  const passOk = timingSafeEqual(digest(password), digest(wantPassword.reveal()));
  return userOk && passOk;
}

export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const adapter = new HonoAdapter(serveStatic).setBasePath('/');
  const queues = options.queues.map((q) => {
    const a = new BullMQAdapter(q, { readOnlyMode: true, allowRetries: false });
    a.setFormatter('data', (data: unknown) => hideSecrets(data));
    return a;
  });
  createBullBoard({ queues, serverAdapter: adapter, options: { uiConfig: { boardTitle: options.title ?? 'collections-sync' } } });

  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.use(
    '*',
    basicAuth({
      realm: 'collections-sync dashboard',
      verifyUser: (username, password) => sameCredentials(username, password, options.username, options.password),
    }),
  );
  app.use('*', async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') return c.json({ detail: 'the dashboard is read-only' }, 405, { allow: 'GET, HEAD' });
    return next();
  });
  app.route('/', adapter.registerPlugin());
  app.onError((err, c) => {
    if (err instanceof HTTPException) return err.getResponse();
    options.logger?.error({ err: err.message, path: c.req.path }, 'dashboard: request failed');
    return c.json({ detail: 'internal error' }, 500);
  });

  const listener = getRequestListener(app.fetch);
  const server: Server = createServer((req, res) => void listener(req, res));
  server.keepAliveTimeout = 5_000;
  const host = options.host ?? '127.0.0.1';
  const listening = await listen(server, options.port, host);
  return { port: listening.port, url: `http://${host.includes(':') ? `[${host}]` : host}:${listening.port}/`, close: () => listening.close() };
}
