/**
 * Listening and closing, the same for every HTTP server of ours (ops, dashboard, webhooks; the test doubles close
 * theirs with `closeServer`): listen on a port (0 = any) and host, reject when the port cannot be had, and close
 * without waiting for kept-alive connections to idle out.
 *
 * `createBoundedServer` holds every connection to stated bounds (SERVER_HEADERS_TIMEOUT_MS,
 * SERVER_REQUEST_TIMEOUT_MS, SERVER_MAX_CONNECTIONS, SERVER_MAX_CONNECTIONS_PER_ADDRESS; decisions 0116, 0164): one
 * address (an IPv6 /64) holds at most its share of the connections, its excess sockets closed at once, so one client
 * cannot take them all; a trusted proxy's address (TRUST_PROXY's CIDRs) is spared. Node checks its own timeouts only every
 * `connectionsCheckingInterval` (30 s by default), which let a stalled body hold a connection for about 72 s
 * although the request timeout was 10 s; here the check runs often, and a response sent before its request's body
 * was read ends the connection (after a short grace for the answer to reach the client).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { addressKey, isTrustedProxy } from './client-address.js';
import { parseTrustProxy, type TrustProxy } from './config/trust-proxy.js';

export interface Listening {
  port: number;
  close(): Promise<void>;
}

/** The bounds of one server's connections. */
export interface ServerLimits {
  /**
   * A request's body must arrive within this after its headers: a handler's body deadline. Node's own request timeout
   * (headers and body, from the request's first byte) is this plus `headersTimeoutMs`: a backstop that never fires
   * before a handler's deadline, so a stalled body gets the handler's answer (its 401 or 408), not a race of the two.
   */
  requestTimeoutMs: number;
  /** The headers must arrive within this (at most requestTimeoutMs). */
  headersTimeoutMs: number;
  /** Connections open at once; more are refused at accept. */
  maxConnections: number;
  /** Connections open at once from one address (an IPv6 /64); more are closed at once. Default: maxConnections. */
  maxConnectionsPerAddress?: number;
  /** TRUST_PROXY: the addresses of its CIDRs are proxies carrying many clients, spared the per-address cap. */
  trustProxy?: TrustProxy;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = { requestTimeoutMs: 10_000, headersTimeoutMs: 5_000, maxConnections: 1_000, maxConnectionsPerAddress: 100 };

/** How long an answer sent before its request's body was read may take to reach the client before the socket goes. */
const CLOSE_GRACE_MS = 1_000;

export function createBoundedServer(handler: (req: IncomingMessage, res: ServerResponse) => void, limits: ServerLimits = DEFAULT_SERVER_LIMITS): Server {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  const requestTimeout = limits.requestTimeoutMs + headersTimeout;
  const server = createServer({ requestTimeout, headersTimeout, connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(headersTimeout / 4))) }, (req, res) => {
    res.once('finish', () => {
      if (req.complete) return;
      // Answered before the body came (a refusal, a deadline): no keep-alive, and no waiting on the rest of it.
      req.socket.end();
      setTimeout(() => req.socket.destroy(), CLOSE_GRACE_MS).unref();
    });
    handler(req, res);
  });
  server.keepAliveTimeout = 5_000;
  server.maxConnections = limits.maxConnections;
  capPerAddress(server, Math.min(limits.maxConnectionsPerAddress ?? limits.maxConnections, limits.maxConnections), limits.trustProxy);
  return server;
}

/**
 * At most `cap` sockets open at once per address (an IPv6 /64): a socket past it is destroyed as it is accepted, before
 * a byte is read, so a client that reopens what was dropped holds no more than its share. Runs after Node's own
 * `connection` listener (which counted the socket against maxConnections first).
 */
function capPerAddress(server: Server, cap: number, trust: TrustProxy | undefined): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    if (trust !== undefined && isTrustedProxy(socket.remoteAddress, trust)) return;
    const key = addressKey(socket.remoteAddress);
    const n = open.get(key) ?? 0;
    if (n >= cap) {
      socket.destroy();
      return;
    }
    open.set(key, n + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

export async function listen(server: Server, port: number, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { port: (server.address() as AddressInfo).port, close: () => closeServer(server) };
}

/** Stops accepting, drops open connections (idle keep-alive ones included) and resolves once closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** The limits the environment sets (SERVER_*, and TRUST_PROXY's proxies spared the per-address cap). */
export function serverLimitsOf(env: {
  SERVER_REQUEST_TIMEOUT_MS: number;
  SERVER_HEADERS_TIMEOUT_MS: number;
  SERVER_MAX_CONNECTIONS: number;
  SERVER_MAX_CONNECTIONS_PER_ADDRESS: number;
  TRUST_PROXY?: string | undefined;
}): ServerLimits {
  return {
    requestTimeoutMs: env.SERVER_REQUEST_TIMEOUT_MS,
    headersTimeoutMs: env.SERVER_HEADERS_TIMEOUT_MS,
    maxConnections: env.SERVER_MAX_CONNECTIONS,
    maxConnectionsPerAddress: env.SERVER_MAX_CONNECTIONS_PER_ADDRESS,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
  };
}

/**
 * Requests per key (a tenant, a client address, an API key's name) in the current minute, per process: the public
 * server's limits. Bounded in the keys it remembers (past 10,000 it starts afresh).
 */
export class MinuteLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly perMin: number) {}
  /** 0 when allowed, else the seconds until the window ends. */
  take(key: string, now = Date.now()): number {
    const w = this.#windows.get(key);
    if (!w || now - w.start >= 60_000) {
      if (this.#windows.size >= 10_000) this.#windows.clear();
      this.#windows.set(key, { start: now, count: 1 });
      return 0;
    }
    if (w.count >= this.perMin) return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
    w.count += 1;
    return 0;
  }
  /** What `take` would answer, without counting. */
  peek(key: string, now = Date.now()): number {
    const w = this.#windows.get(key);
    if (!w || now - w.start >= 60_000 || w.count < this.perMin) return 0;
    return Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
  }
}
