/**
 * Security review, finding 4: one address could take every connection of the public server (1,000 sockets from one
 * client, reopened as they were dropped; 72 of 79 genuine webhook posts failed). Connections are capped per address
 * (SERVER_MAX_CONNECTIONS_PER_ADDRESS): the rest of SERVER_MAX_CONNECTIONS stays for everyone else, and the excess
 * sockets of that address are closed at once. Real sockets on 127.0.0.1; the other address is 127.0.0.2 (Linux
 * routes the whole of 127/8 to lo). Addresses of trusted proxies (TRUST_PROXY's CIDRs) are spared the cap.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseTrustProxy } from '../../src/config/trust-proxy.js';
import { Secret } from '../../src/secret.js';
import { createLogger } from '../../src/logger.js';
import type { ServerLimits } from '../../src/http-server.js';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';

const SECRET = 'whsec-acme-0123456789abcdef';

describe('connections per address on the public server', () => {
  let server: WebhookServer | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    sockets.length = 0;
    await server?.close();
  });

  const start = async (limits: ServerLimits): Promise<number> => {
    server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      signatureHeader: 'x-webhook-signature',
      ratePerMin: 100_000,
      logger: createLogger({ level: 'silent' }),
      limits,
      secretOf: (id) => (id === 'acme' ? new Secret(SECRET) : undefined),
      accept: async () => ({ eventId: 'e', duplicate: false }),
    });
    return server.port;
  };

  /** An idle socket from `from`; resolves once connected, with whether the server closed it within `ms`. */
  const idle = (port: number, from: string, ms = 400): Promise<{ socket: Socket; closedWithin: boolean }> =>
    new Promise((resolve) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: from });
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.on('connect', () => {
        const timer = setTimeout(() => resolve({ socket, closedWithin: false }), ms);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve({ socket, closedWithin: true });
        });
      });
      socket.once('close', () => resolve({ socket, closedWithin: true }));
    });

  /** A genuine webhook post from `from`: its status, or 0 when the connection failed. */
  const post = (port: number, from: string): Promise<number> =>
    new Promise((resolve) => {
      const body = '{"id":"evt"}';
      const req = request({ port, host: '127.0.0.1', localAddress: from, method: 'POST', path: '/webhooks/calls/acme', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end(body);
    });

  it('one address holding sockets, reopened as they are dropped, leaves the rest of the cap to others', { timeout: 20_000 }, async () => {
    const port = await start({ requestTimeoutMs: 30_000, headersTimeoutMs: 30_000, maxConnections: 20, maxConnectionsPerAddress: 5 });
    // The flood: 60 sockets from 127.0.0.1, each dropped one reopened, for as long as the genuine posts last.
    let flooding = true;
    let opened = 0;
    const flood = async (): Promise<void> => {
      while (flooding) {
        opened += 1;
        const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
        sockets.push(socket);
        socket.on('error', () => undefined);
        // Held until the server drops it (or the test ends), then opened again.
        await new Promise<void>((resolve) => {
          socket.once('close', () => resolve());
          const stop = setInterval(() => {
            if (!flooding) {
              clearInterval(stop);
              resolve();
            }
          }, 20);
          socket.once('close', () => clearInterval(stop));
        });
      }
    };
    const floods = Array.from({ length: 60 }, () => flood());
    await new Promise((r) => setTimeout(r, 300));
    const statuses: number[] = [];
    for (let i = 0; i < 20; i += 1) statuses.push(await post(port, '127.0.0.2'));
    flooding = false;
    await Promise.all(floods);
    expect(statuses).toEqual(Array<number>(20).fill(200));
    // The flood went on: its sockets past its share were dropped and opened again, many times.
    expect(opened).toBeGreaterThan(200);
  });

  it('closes the excess sockets of an address at once, and keeps those within its share', { timeout: 10_000 }, async () => {
    const port = await start({ requestTimeoutMs: 30_000, headersTimeoutMs: 30_000, maxConnections: 100, maxConnectionsPerAddress: 5 });
    const first = await Promise.all(Array.from({ length: 5 }, () => idle(port, '127.0.0.1')));
    expect(first.map((s) => s.closedWithin)).toEqual(Array<boolean>(5).fill(false));
    const excess = await Promise.all(Array.from({ length: 3 }, () => idle(port, '127.0.0.1')));
    expect(excess.map((s) => s.closedWithin)).toEqual(Array<boolean>(3).fill(true));
    // Another address has a share of its own; one socket of the first closed frees a place for it.
    expect((await idle(port, '127.0.0.2')).closedWithin).toBe(false);
    first[0]!.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect((await idle(port, '127.0.0.1')).closedWithin).toBe(false);
  });

  it("spares a trusted proxy's address (TRUST_PROXY's CIDRs): it carries many clients", { timeout: 10_000 }, async () => {
    const port = await start({ requestTimeoutMs: 30_000, headersTimeoutMs: 30_000, maxConnections: 100, maxConnectionsPerAddress: 2, trustProxy: parseTrustProxy('127.0.0.1/32') });
    const proxied = await Promise.all(Array.from({ length: 6 }, () => idle(port, '127.0.0.1')));
    expect(proxied.filter((s) => s.closedWithin)).toEqual([]);
    const direct = await Promise.all(Array.from({ length: 3 }, () => idle(port, '127.0.0.2')));
    expect(direct.filter((s) => s.closedWithin)).toHaveLength(1);
  });
});
