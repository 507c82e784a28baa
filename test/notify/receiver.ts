/**
 * A run-webhook receiver for tests: a node:http server on 127.0.0.1 that verifies every request with the
 * `standardwebhooks` package (as a customer's receiver would) and answers as the test says: `ok` (204), a status
 * (500, 503), or `hang` (reads the request and never answers, until the receiver closes).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload `Webhook.verify` returned, or the error it threw. */
  verified: unknown;
  valid: boolean;
  /** Whether this request has been answered (false while a `hang` holds it). */
  answered: boolean;
}

export type Answer = 'ok' | 'hang' | number;

export interface Receiver {
  url: string;
  received: Received[];
  /** Requests held without an answer. */
  held(): number;
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export async function startReceiver(secret: string, answer: (n: number) => Answer = () => 'ok', path = '/hooks/runs'): Promise<Receiver> {
  const received: Received[] = [];
  const holding = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: unknown;
      let valid = false;
      try {
        verified = new Webhook(secret).verify(body, req.headers as Record<string, string>);
        valid = true;
      } catch (err) {
        verified = err;
      }
      const entry: Received = { headers: req.headers, body, verified, valid, answered: false };
      received.push(entry);
      const a = answer(received.length);
      if (a === 'hang') {
        holding.add(res);
        return;
      }
      entry.answered = true;
      res.writeHead(a === 'ok' ? 204 : a).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    held: () => holding.size,
    async waitFor(n, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`the receiver got ${received.length} requests, not ${n}, within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `read` until `done` holds of its value (or throws after `timeoutMs`). */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`not reached within ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
