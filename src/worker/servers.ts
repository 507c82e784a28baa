/**
 * The worker's two HTTP servers, bound before any BullMQ worker registers: a port that cannot be had
 * fails the start while nothing consumes a queue yet, with one line naming the setting, not `listen EADDRINUSE`.
 */
import type { App } from '../app.js';
import { serverLimitsOf } from '../http-server.js';
import { startOpsServer, type OpsServer, type Readiness } from '../ops/server.js';
import type { WebhookServer } from '../webhooks/index.js';
import { startPublicServer } from './public-server.js';
import { StartError, type StartGuard } from './start-guard.js';

export interface ServerSettings {
  /** As OPS_PORT (0 = off), or 'random' (tests). */
  opsPort: number | 'random';
  opsHost: string | undefined;
  /** As WEBHOOK_PORT (undefined = off), or 'random' (tests). */
  webhookPort: number | 'random' | undefined;
  webhookHost: string;
  readiness: () => Promise<Readiness>;
  beforeScrape: () => Promise<void>;
}

/** What to set instead, per server: the port's setting, the host's, and how to turn the server off. */
const SETTINGS = {
  ops: { port: 'OPS_PORT', host: '--ops-host', off: 'or 0 to turn the ops server off' },
  webhooks: { port: 'WEBHOOK_PORT', host: 'WEBHOOK_HOST', off: ', or unset it to turn the webhook receiver off' },
} as const;

/** A listen error as one line naming the setting to change. */
export function listenFailure(server: keyof typeof SETTINGS, port: number, host: string, err: unknown): Error {
  const s = SETTINGS[server];
  const code = (err as NodeJS.ErrnoException).code;
  const off = s.off.startsWith(',') ? s.off : ` ${s.off}`;
  const cause = { cause: err };
  if (code === 'EADDRINUSE') return new StartError(s.port, `${s.port}=${port} is taken by another process; set ${s.port} to a free port${off}`, cause);
  if (code === 'EACCES') return new StartError(s.port, `${s.port}=${port} may not be bound by this user (ports below 1024 need privileges); set ${s.port} to a port above 1023${off}`, cause);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new StartError(s.host, `${s.host}=${host} is not an address of this machine; set ${s.host} to one of its addresses (0.0.0.0: all of them)`, cause);
  }
  return new StartError(s.port, `${s.port}=${port} on ${host} cannot be listened on (${(err as Error).message}); set ${s.port} to a free port${off}`, cause);
}

/** A system error of `listen` (or of resolving its host), as opposed to any other failure of a start step. */
function isListenError(err: unknown): boolean {
  return typeof (err as NodeJS.ErrnoException | undefined)?.syscall === 'string';
}

/**
 * The public server's settings that cannot work without it, checked before the start touches Redis: connect links
 * (PUBLIC_URL) and the control API (API_KEYS) are served by it, so either without WEBHOOK_PORT stops the start.
 */
export function checkPublicServerSettings(env: App['env'], webhookPort: number | 'random' | undefined): void {
  if (webhookPort !== undefined) return;
  if (env.PUBLIC_URL !== undefined) {
    throw new StartError(
      'WEBHOOK_PORT',
      `PUBLIC_URL=${env.PUBLIC_URL} is set but WEBHOOK_PORT is not: the connect links built on it would reach no server; set WEBHOOK_PORT to the public server's port, or unset PUBLIC_URL`,
    );
  }
  if (env.API_KEYS !== undefined) {
    throw new StartError('WEBHOOK_PORT', "API_KEYS is set but WEBHOOK_PORT is not: the control API is served on the public server; set WEBHOOK_PORT to the public server's port, or unset API_KEYS");
  }
}

/**
 * Binds the ops server, then the webhook receiver; each is closed again should a later start step fail. Binding
 * takes milliseconds and is not raced against an abort: the guard is checked before each.
 */
export async function bindServers(app: App, s: ServerSettings, guard: StartGuard): Promise<{ ops: OpsServer | undefined; webhooks: WebhookServer | undefined }> {
  let ops: OpsServer | undefined;
  if (s.opsPort !== 0 && app.metrics) {
    const port = s.opsPort === 'random' ? 0 : s.opsPort;
    const host = s.opsHost ?? '127.0.0.1';
    guard.check();
    const server = await startOpsServer({ port, host, registry: app.metrics.registry, readiness: s.readiness, beforeScrape: s.beforeScrape, limits: serverLimitsOf(app.env) }).catch((err: unknown) => {
      throw isListenError(err) ? listenFailure('ops', port, host, err) : err;
    });
    guard.opens(() => server.close());
    ops = server;
  }
  let webhooks: WebhookServer | undefined;
  if (s.webhookPort !== undefined) {
    const port = s.webhookPort === 'random' ? 0 : s.webhookPort;
    guard.check();
    const server = await startPublicServer(app, { port, host: s.webhookHost }).catch((err: unknown) => {
      throw isListenError(err) ? listenFailure('webhooks', port, s.webhookHost, err) : err;
    });
    guard.opens(() => server.close());
    webhooks = server;
    app.logger.info({ port: server.port, host: s.webhookHost }, 'webhook receiver listening');
  }
  return { ops, webhooks };
}
