/**
 * The job dashboard: bull-board over the worker's queues, read-only (no retry, pause, clean or remove, in
 * bull-board and again here: only GET and HEAD pass), behind HTTP basic auth. `/healthz` answers without auth,
 * for container health checks. Job data holds ids only; values under secret-like keys are hidden anyway.
 *
 * A failed login (decisions 0120, 0172) is logged at warn with the remote address and its failures this minute (never
 * the user name tried, which may be a password typed in the wrong field, nor the password), and answered only after
 * `failureDelayMs` (500 ms); a source address with `maxFailuresPerMin` (10) failures in its current minute gets 429
 * with Retry-After, its credentials unchecked (the right ones too: an answer that differed would tell a guesser when
 * it guessed right), until the minute ends.
 */
import { sameSecret } from '../guards.js';
import type { Server } from 'node:http';
import { createBoundedServer, listen, type ServerLimits } from '../http-server.js';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import { basicAuth } from 'hono/basic-auth';
import { HTTPException } from 'hono/http-exception';
import type { Secret } from '../secret.js';
import type { Logger } from '../logger.js';
import { sleep } from '../sleep.js';

export interface DashboardOptions {
  queues: readonly Queue[];
  port: number;
  /** Default 127.0.0.1 (0.0.0.0 in the container). */
  host?: string;
  username: string;
  password: Secret;
  title?: string;
  logger?: Logger;
  /** Connection bounds (SERVER_*); default DEFAULT_SERVER_LIMITS. */
  limits?: ServerLimits;
  /** A failed login is answered this long after it (default 500 ms). */
  failureDelayMs?: number;
  /** Failed logins per source address per minute before it gets 429 (default 10). */
  maxFailuresPerMin?: number;
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

/** Compares credentials in constant time (both are compared whatever the first gave). */
function sameCredentials(username: string, password: string, wantUser: string, wantPassword: Secret): boolean {
  const userOk = sameSecret(username, wantUser);
  const passOk = sameSecret(password, wantPassword.reveal());
  return userOk && passOk;
}

/** Failed logins per source address, per minute (per process: the dashboard is one process). */
export class LoginGuard {
  readonly #windows = new Map<string, { start: number; failures: number }>();
  constructor(private readonly maxPerMin: number) {}

  /** 0 while the source may try, else the seconds until its minute ends. */
  heldFor(source: string, now = Date.now()): number {
    const w = this.#windows.get(source);
    if (!w || now - w.start >= 60_000 || w.failures < this.maxPerMin) return 0;
    return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
  }

  /** Counts a failure; returns the source's failures in its minute. */
  failed(source: string, now = Date.now()): number {
    if (this.#windows.size > 10_000) for (const [k, w] of this.#windows) if (now - w.start >= 60_000) this.#windows.delete(k);
    const w = this.#windows.get(source);
    if (!w || now - w.start >= 60_000) {
      this.#windows.set(source, { start: now, failures: 1 });
      return 1;
    }
    w.failures += 1;
    return w.failures;
  }
}

export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const adapter = new HonoAdapter(serveStatic).setBasePath('/');
  const queues = options.queues.map((q) => {
    const a = new BullMQAdapter(q, { readOnlyMode: true, allowRetries: false });
    a.setFormatter('data', (data: unknown) => hideSecrets(data));
    return a;
  });
  createBullBoard({ queues, serverAdapter: adapter, options: { uiConfig: { boardTitle: options.title ?? 'collections-sync' } } });

  const guard = new LoginGuard(options.maxFailuresPerMin ?? 10);
  const failureDelayMs = options.failureDelayMs ?? 500;
  const app = new Hono<{ Bindings: HttpBindings }>();
  const sourceOf = (c: { env: HttpBindings }): string => c.env.incoming.socket.remoteAddress ?? '(unknown)';
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.use('*', async (c, next) => {
    const wait = guard.heldFor(sourceOf(c));
    if (wait > 0) return c.json({ detail: 'too many failed logins from this address; try again later' }, 429, { 'retry-after': String(wait) });
    return next();
  });
  app.use(
    '*',
    basicAuth({
      realm: 'collections-sync dashboard',
      verifyUser: async (username, password, c) => {
        if (sameCredentials(username, password, options.username, options.password)) return true;
        const remoteAddress = sourceOf(c);
        const failures = guard.failed(remoteAddress);
        options.logger?.warn({ remoteAddress, failures }, 'dashboard: login failed');
        await sleep(failureDelayMs);
        return false;
      },
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
  const server: Server = createBoundedServer((req, res) => void listener(req, res), options.limits);
  const host = options.host ?? '127.0.0.1';
  const listening = await listen(server, options.port, host);
  return { port: listening.port, url: `http://${host.includes(':') ? `[${host}]` : host}:${listening.port}/`, close: () => listening.close() };
}
