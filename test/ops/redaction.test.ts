import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authClientKey, authKeys } from '../../src/auth/index.js';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { prefixPattern } from '../../src/redis/keys.js';

const TOKEN_PATH = '/auth/v1/api-key/auth';

/** Forwards to the simulator's token endpoint and keeps every token it hands out (and the request bodies). */
async function tokenRecorder(target: string): Promise<{ url: string; tokens: string[]; bodies: string[]; close(): Promise<void> }> {
  const tokens: string[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        bodies.push(body);
        const upstream = await fetch(`${target}${req.url ?? '/'}`, {
          method: req.method ?? 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          ...(body ? { body } : {}),
        });
        const text = await upstream.text();
        if (req.url === TOKEN_PATH && upstream.status === 200) {
          const parsed = JSON.parse(text) as { access_token?: unknown };
          if (typeof parsed.access_token === 'string') tokens.push(parsed.access_token);
        }
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
        res.end(text);
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tokens,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Every key (under `match`) with its whole content as text, whatever its type. */
async function dumpRedis(url: string, match: string): Promise<Map<string, string>> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  const out = new Map<string, string>();
  try {
    const stream = client.scanStream({ match, count: 1000 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      for (const key of keys) {
        const type = await client.type(key);
        let value: unknown;
        if (type === 'string') value = await client.get(key);
        else if (type === 'hash') value = await client.hgetall(key);
        else if (type === 'list') value = await client.lrange(key, 0, -1);
        else if (type === 'set') value = await client.smembers(key);
        else if (type === 'zset') value = await client.zrange(key, 0, -1, 'WITHSCORES');
        else if (type === 'stream') value = await client.xrange(key, '-', '+');
        else if (type === 'none') continue;
        else throw new Error(`unexpected Redis type ${type} at ${key}`);
        out.set(key, JSON.stringify(value));
      }
    }
  } finally {
    client.disconnect();
  }
  return out;
}

describe('secrets stay out of logs, job data and Redis', () => {
  const SECRET = `S3cr3t-${randomBytes(12).toString('hex')}`;
  const CLIENT = 'client-acme';
  const redis = useTestRedis();
  let sim: Simulator;
  let recorder: Awaited<ReturnType<typeof tokenRecorder>>;
  let rig: Rig;
  let folder: string;
  let data: ReturnType<typeof sampleData>;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-ops-redaction-'));
    data = sampleData({ contacts: 60, seed: 5, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    const bad = data.contacts[2];
    if (bad) bad.email = 'not-an-email';
    await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
    await writeNdjson(join(folder, 'invoices.ndjson'), [...data.invoices, { ...data.invoices[0], id: 'INV-ORPHAN', contactId: 'C-NOBODY' }]);
    await writeNdjson(join(folder, 'payments.ndjson'), data.payments);
    sim = await startSimulator({ clients: [{ clientId: CLIENT, clientSecret: SECRET }] });
    recorder = await tokenRecorder(sim.authUrl);
    rig = await startRig({
      redisUrl: redis.url,
      sim,
      tenants: [{ id: 'acme', platform: { kind: 'file', path: folder }, clientSecret: SECRET }],
      env: { COLLECTIONS_AUTH_URL: recorder.url, PENDING_MAX_WAIT_S: '0' },
      logLevel: 'debug',
    });
  });
  afterAll(async () => {
    await rig?.close();
    await recorder?.close();
    await sim?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('holds over a whole sync run with a forced rotation', async () => {
    // Job data as the workers receive it (refresh-token jobs are removed once complete, so Redis alone would miss them).
    const jobData: { queue: string; data: string }[] = [];
    for (const w of rig.worker?.workers ?? []) w.on('active', (job) => jobData.push({ queue: w.name, data: JSON.stringify(job.data) }));
    const first = await rig.sync('acme', 'full');
    expect(first.outcome).toBe('partial'); // the orphan invoice is dead-lettered
    // Someone else takes a token with the same credentials: the worker's token is superseded, it gets 401s and rotates.
    const outside = await fetch(`${recorder.url}${TOKEN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT, clientSecret: SECRET }),
    });
    expect(outside.status).toBe(200);
    // Some records change, so the second run sends requests (with the superseded token first).
    for (const c of data.contacts.slice(0, 10)) c.name = `${c.name} Co.`;
    await writeNdjson(join(folder, 'contacts.ndjson'), data.contacts);
    const again = await rig.sync('acme', 'full');
    expect(again.counts['contacts.updated']).toBe(10);
    expect(again.outcome).toBe('partial');
    expect(sim.counters().unauthorized.superseded).toBeGreaterThanOrEqual(1);

    // The probes are real: the secret went to the token endpoint, at least three tokens were issued.
    expect(recorder.bodies.some((b) => b.includes(SECRET))).toBe(true);
    expect(recorder.tokens.length).toBeGreaterThanOrEqual(3);
    expect(recorder.tokens.length).toBe(sim.counters().tokensIssuedTotal);

    // Logs at debug level: neither the secret nor any token (nor a token's signature alone).
    const logs = rig.logs.join('');
    expect(rig.logs.some((l) => l.includes('"level":20'))).toBe(true);
    expect(logs.length).toBeGreaterThan(1_000);
    expect(logs.includes(SECRET)).toBe(false);
    for (const token of recorder.tokens) {
      expect(logs.includes(token)).toBe(false);
      expect(logs.includes(token.split('.')[2] ?? token)).toBe(false);
    }

    // Redis: every key and value. The secret nowhere; a token only in the auth room's token key (its job).
    const prefix = rig.env.KEY_PREFIX;
    const dump = await dumpRedis(redis.url, redis.kind === 'env' ? prefixPattern(prefix) : '*');
    expect(dump.size).toBeGreaterThan(20);
    const tokenKey = authKeys(prefix, authClientKey(recorder.url, CLIENT)).token;
    for (const [key, value] of dump) {
      expect(key.includes(SECRET) || value.includes(SECRET), `secret in ${key}`).toBe(false);
      for (const token of recorder.tokens) {
        if (key !== tokenKey) expect(value.includes(token) || value.includes(token.split('.')[2] ?? token), `token in ${key}`).toBe(false);
      }
    }
    expect(dump.get(tokenKey)).toContain(recorder.tokens.at(-1));
    // Job data was among what was searched: the sync jobs' hashes in Redis, and every job the workers took.
    expect([...dump].some(([key, value]) => /:sync:[^:]+$/.test(key) && value.includes('"data"'))).toBe(true);
    expect(jobData.some((j) => j.queue === 'sync')).toBe(true);
    expect(jobData.some((j) => j.queue === 'refresh-token')).toBe(true);
    for (const j of jobData) {
      expect(j.data.includes(SECRET), `secret in ${j.queue} job data`).toBe(false);
      for (const token of recorder.tokens) expect(j.data.includes(token), `token in ${j.queue} job data`).toBe(false);
    }
    // Dead letters keep the record, and the record never carried a credential.
    expect([...dump.keys()].some((k) => k.includes(':dead:'))).toBe(true);
  });
});
