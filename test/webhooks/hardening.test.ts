/**
 * The webhook receiver against a hostile client (issue 28 item 5), over real HTTP on 127.0.0.1: an unauthenticated
 * request gets the same 401 (status, body, headers) whether its tenant exists or not, whatever its type or size
 * and whatever its path; a stalled body is answered and its connection closed by the request timeout (set small
 * here: 500 ms); client aborts and refusals write no error line, and refusal lines are rate-limited; a body nested
 * 5,000 deep is a 400.
 */
import { createHmac } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/secret.js';
import { createLogger } from '../../src/logger.js';
import { quickBooksConfig } from '../../src/platforms/quickbooks/config.js';
import { quickBooksWebhook } from '../../src/platforms/quickbooks/webhook.js';
import { MAX_BODY_BYTES, startWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';

const SECRET = 'whsec-acme-0123456789abcdef';
const VERIFIER = 'qbo-verifier-0123456789';
const qbo = quickBooksConfig.parse({ kind: 'quickbooks', clientId: 'ABapp', clientSecret: 'app-secret', environment: 'sandbox', webhookVerifierToken: VERIFIER });

describe('the webhook receiver refuses alike and holds nothing open', () => {
  let server: WebhookServer;
  let base: string;
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const accepted: unknown[] = [];
  const synced: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as (typeof lines)[number]);
        done();
      },
    });
    server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      signatureHeader: 'x-webhook-signature',
      ratePerMin: 10_000,
      logger: createLogger({ level: 'debug', destination }),
      limits: { requestTimeoutMs: 500, headersTimeoutMs: 400, maxConnections: 100 },
      refusalLogPerMin: 5,
      secretOf: (id) => (id === 'acme' ? new Secret(SECRET) : undefined),
      accept: async (_tenant, body) => {
        accepted.push(body);
        return { eventId: `e${accepted.length}`, duplicate: false };
      },
      // QuickBooks' route as the worker composes it (src/worker/public-server.ts), for one company.
      platformRoutes: [
        {
          path: quickBooksWebhook.path,
          label: 'QuickBooks',
          maxBodyBytes: quickBooksWebhook.maxBodyBytes,
          signatureHeader: quickBooksWebhook.signatureHeader,
          listening: () => true,
          verify: async (body, signature) => quickBooksWebhook.handle(body, signature, [{ id: 'acme', connection: '123', config: qbo }]),
          requestSync: async (id) => void synced.push(id),
        },
      ],
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  const answer = async (res: Response): Promise<{ status: number; body: string; headers: Record<string, string> }> => {
    // Request-Id differs from one answer to the next by design (each request gets its own).
    expect(res.headers.get('request-id')).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    const headers = Object.fromEntries([...res.headers].filter(([k]) => k !== 'date' && k !== 'request-id'));
    return { status: res.status, body: await res.text(), headers };
  };
  const post = (path: string, body: string, headers: Record<string, string>): Promise<Response> => fetch(`${base}${path}`, { method: 'POST', body, headers });

  it('answers an unauthenticated request for a known tenant exactly as for an unknown one, whatever its type, size or path', async () => {
    const big = 'x'.repeat(MAX_BODY_BYTES + 10);
    const badSig = { 'x-webhook-signature': 'a'.repeat(64) };
    const cases: [string, Record<string, string>][] = [
      ['{"a":1}', { 'content-type': 'text/plain' }],
      ['{"a":1}', { 'content-type': 'text/plain', authorization: 'Bearer wrong-secret-0123456789' }],
      [big, { 'content-type': 'application/json' }],
      [big, { 'content-type': 'application/json', ...badSig }],
      ['{"a":1}', { 'content-type': 'text/plain', ...badSig }],
      ['not json', { 'content-type': 'application/json', ...badSig }],
    ];
    const expected = await answer(await post('/webhooks/calls/nobody', '{}', { 'content-type': 'application/json' }));
    expect(expected.status).toBe(401);
    for (const [body, headers] of cases) {
      const known = await answer(await post('/webhooks/calls/acme', body, headers));
      const unknown = await answer(await post('/webhooks/calls/nobody', body, headers));
      // WWW-Authenticate follows the request alone (RFC 6750: a Bearer token sent and refused is invalid_token).
      const refused = { ...expected, headers: { ...expected.headers, 'www-authenticate': headers['authorization'] === undefined ? 'Bearer' : 'Bearer error="invalid_token"' } };
      expect(known).toEqual(refused);
      expect(unknown).toEqual(refused);
    }
    expect(await answer(await post('/webhooks/elsewhere', '{}', { 'content-type': 'application/json' }))).toEqual(expected);
    expect(await answer(await post('/webhooks/quickbooks', big, { 'content-type': 'application/json', 'intuit-signature': 'AAAA' }))).toEqual(expected);
    expect(accepted).toEqual([]);
    // Once authenticated, the content is judged.
    expect((await post('/webhooks/calls/acme', '{"a":1}', { 'content-type': 'text/plain', authorization: `Bearer ${SECRET}` })).status).toBe(415);
    expect((await post('/webhooks/calls/acme', big, { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` })).status).toBe(413);
  });

  /** Sends the head of a POST and `partial` bytes of a longer body, then stalls; resolves with what came back once the server closed. */
  const stall = (path: string, headers: Record<string, string>, partial = 10): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket: Socket = connect(server.port, '127.0.0.1');
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString()));
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
      const head = Object.entries({ host: '127.0.0.1', 'content-type': 'application/json', 'content-length': '1000', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n${'{'.repeat(partial)}`);
    });

  it('answers a stalled body within the request timeout and closes its connection (both routes, known and unknown tenants)', { timeout: 8_000 }, async () => {
    const sig = { 'x-webhook-signature': 'b'.repeat(64) };
    const [known, unknown, qbo, authed] = await Promise.all([
      stall('/webhooks/calls/acme', sig),
      stall('/webhooks/calls/nobody', sig),
      stall('/webhooks/quickbooks', { 'intuit-signature': 'AAAA' }),
      stall('/webhooks/calls/acme', { authorization: `Bearer ${SECRET}` }),
    ]);
    for (const got of [known, unknown, qbo]) expect(got).toMatch(/^HTTP\/1\.1 401 /);
    expect(authed).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('logs client aborts at debug and refusals at info, at most refusalLogPerMin lines a minute', async () => {
    const before = lines.length;
    // A known tenant's signed request whose client goes away mid-body.
    await new Promise<void>((resolve) => {
      const socket = connect(server.port, '127.0.0.1', () => {
        socket.write(`POST /webhooks/calls/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nx-webhook-signature: ${'c'.repeat(64)}\r\n\r\n{"a":`, () => setTimeout(() => socket.destroy(), 50));
      });
      socket.on('close', () => resolve());
    });
    for (const end = Date.now() + 5_000; Date.now() < end && !lines.slice(before).some((l) => /closed the request|request failed/.test(l.msg)); ) await new Promise((r) => setTimeout(r, 20));
    expect(lines.slice(before).find((l) => /closed the request/.test(l.msg))?.level).toBe(20);
    for (let i = 0; i < 12; i += 1) expect((await post('/webhooks/calls/acme', '{}', { 'content-type': 'application/json', authorization: 'Bearer nope-nope-nope-nope' })).status).toBe(401);
    const mine = lines.slice(before);
    expect(mine.filter((l) => l.level >= 40)).toEqual([]);
    expect(mine.filter((l) => l.msg === 'webhook refused').length).toBeLessThanOrEqual(5);
  });

  it('answers 400 to an authenticated body nested 5,000 deep (calls and QuickBooks)', async () => {
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    const res = await post('/webhooks/calls/acme', deep, { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/deeper than 64/);
    const signature = createHmac('sha256', VERIFIER).update(deep).digest('base64');
    expect((await post('/webhooks/quickbooks', deep, { 'content-type': 'application/json', 'intuit-signature': signature })).status).toBe(400);
    expect(accepted).toEqual([]);
    expect(synced).toEqual([]);
    // A shallow one still goes through.
    expect((await post('/webhooks/calls/acme', '{"id":"ok-1"}', { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` })).status).toBe(200);
  });
});
