/**
 * The key strings, store by store, written out by hand: a change of layout must show here as a deliberate diff,
 * and a store that names a key on its own shows up as a key nobody expected. Each store writes through its public
 * methods; the test lists what landed in Redis. The layout of issue 13: `<base>:<kind>:{<owner>}[:<part>...]`,
 * the owner (tenant, client, connection, campaign) as the Cluster hash tag; KEY_PREFIX's braces dropped.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { IdempotencyStore } from '../../src/api/idempotency.js';
import { describe, expect, it } from 'vitest';
import { authClientKey, authKeys } from '../../src/auth/index.js';
import { CallLedger, CampaignStore } from '../../src/calls/index.js';
import { LinkStore } from '../../src/connect/links.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { limiterFor } from '../../src/platforms/oauth/rate-limiter.js';
import { quickBooksOAuth } from '../../src/platforms/quickbooks/oauth.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';
import { QuickBooksMemory } from '../../src/platforms/quickbooks/memory.js';
import { PlatformTokenStore, XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { clientDigest, keyBase, legacyKey, queuePrefix, tenantKey } from '../../src/redis/keys.js';
import { createStateStores } from '../../src/state/index.js';
import { TenantFlags } from '../../src/state/flags.js';
import { RecordMirror } from '../../src/state/record-mirror.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

let redis: Redis;
useRedisClient((client) => (redis = client));

/** Every key under `prefix`, sorted. */
async function keysUnder(prefix: string): Promise<string[]> {
  return (await redis.keys(`${keyBase(prefix).replace(/([*?[\]\\])/g, '\\$1')}:*`)).sort();
}

describe('key strings (pinned: a change of layout needs migrate-keys)', () => {
  it('state: id map, intents, cursors, checkpoint, dead letters, pending, payment ledger, runs, run lock, last delivery', async () => {
    const p = testPrefix();
    const s = createStateStores(redis, p);
    await s.records.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h1' }]);
    await s.intents.begin('acme', 'c1', { name: 'n', at: 1, runId: 'run-1' });
    await s.cursors.advance('acme', 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'c1' });
    await s.cursors.saveCheckpoint('acme', 'run-1', 'invoices', { pageToken: 't', counts: {} });
    await s.deadLetters.add('acme', [{ entity: 'invoices', platformId: 'i1', reason: 'r', code: 'c', runId: 'run-1', at: 1 }]);
    await s.pending.add('acme', [{ id: 'i2', record: {}, firstSeenAt: 1, waitingFor: 'c9' }]);
    await s.paymentLedger.setMany('acme', [{ invoiceId: 'i1', paymentId: 'p1', amount: 1, deleted: false }]);
    await s.runs.start('acme', { runId: 'run-1', mode: 'full', startedAt: 1, trigger: 'test' });
    expect(await s.runLock.acquire('acme', 'me', 60_000)).toBe(true);
    await s.deliveries.record('acme', { eventId: 'msg_1', type: 'run.finished', state: 'delivered', attempts: 1, at: 1 });

    const b = keyBase(p);
    expect(await keysUnder(p)).toEqual(
      [
        `${b}:checkpoint:{acme}`,
        `${b}:cursors:{acme}`,
        `${b}:dead:{acme}`,
        `${b}:dead:{acme}:by:all`,
        `${b}:dead:{acme}:by:invoices`,
        `${b}:intents:{acme}`,
        // Packed records (id map, mirror cells, ledger entry of a record in one value): one per entity.
        `${b}:rec:{acme}:contacts`,
        `${b}:rec:{acme}:invoices`,
        `${b}:rec:{acme}:payments`,
        `${b}:lock:run:{acme}`,
        `${b}:notify:{acme}`,
        `${b}:pending:{acme}`,
        `${b}:runs:{acme}:index`,
        `${b}:runs:{acme}:run:run-1`,
      ].sort(),
    );
    expect(s.runLock.key('acme')).toBe(`${b}:lock:run:{acme}`);
    expect(s.runs.runKey('acme', 'run-1')).toBe(`${b}:runs:{acme}:run:run-1`);
  });

  it('record mirror and flags', async () => {
    const p = testPrefix();
    await new RecordMirror(redis, p).putMany('acme', 'contacts', [{ id: 'c1', name: 'n', deleted: false }]);
    await new RecordMirror(redis, p).putMany('acme', 'invoices', [
      { id: 'i1', contactId: 'c1', updatedAt: '2026-01-01T00:00:00Z', status: 'AUTHORISED', deleted: false, number: 'INV-1', date: '2026-01-01', dueDate: '2026-02-01', total: 1 },
    ]);
    await new TenantFlags(redis, p).set('acme', 'adopted', '1');
    const b = keyBase(p);
    expect(await keysUnder(p)).toEqual([`${b}:flags:{acme}`, `${b}:rec:{acme}:contacts`, `${b}:rec:{acme}:invoices`]);
  });

  it('call ledger and campaigns', async () => {
    const p = testPrefix();
    const number = '+966501234567';
    await new CallLedger(redis, p, { cooldownMs: 60_000 }).reserve('acme', 'cmp-a', 0, [number]);
    const store = new CampaignStore(redis, p);
    const meta = { id: 'cmp-a', tenant: 'acme', source: 'list', dryRun: false, createdAt: Date.now(), status: 'queued' } as const;
    await store.create(meta, [{ number, label: 'x', contact: { numberToCall: number } }]);
    await store.storePlan(meta, { requests: [{ index: 0, state: 'planned', updatedAt: 1 }], entries: [{ number, request: 0, state: 'planned', label: 'x', at: 1 }], skipped: [] });
    await store.cancel('cmp-a');
    await store.addUnknown('acme', 'cmp-a', [number]);

    const b = keyBase(p);
    expect(await keysUnder(p)).toEqual(
      [
        `${b}:calls:c:{cmp-a}`,
        `${b}:calls:c:{cmp-a}:cancel`,
        `${b}:calls:c:{cmp-a}:ent`,
        `${b}:calls:c:{cmp-a}:input`,
        `${b}:calls:c:{cmp-a}:req`,
        `${b}:calls:c:{cmp-a}:skip`,
        `${b}:calls:ledger:{acme}:${number}`,
        `${b}:calls:t:{acme}:campaigns`,
        `${b}:calls:t:{acme}:unknown`,
      ].sort(),
    );
    expect(store.lockKey('cmp-a')).toBe(`${b}:calls:c:{cmp-a}:lock`);
  });

  it('a client of the token protocol is a digest of its auth URL and client id (issue 17)', () => {
    const k = authClientKey('http://svc-a.test:4010', 'c1');
    expect(k).toMatch(/^[0-9a-f]{32}$/);
    expect(authClientKey('HTTP://SVC-A.test:4010/', 'c1')).toBe(k);
    expect(authClientKey('http://svc-b.test:4010', 'c1')).not.toBe(k);
    expect(authClientKey('http://svc-a.test:4010', 'c2')).not.toBe(k);
    // Parts are length-prefixed: moving text from one part to the other gives another key.
    expect(clientDigest('ab', 'c')).not.toBe(clientDigest('a', 'bc'));
  });

  it('the token protocol of a client', () => {
    expect(authKeys('{cs}', 'client-1')).toEqual({
      token: 'cs:auth:{client-1}:token',
      gate: 'cs:auth:{client-1}:gate',
      leases: 'cs:auth:{client-1}:leases',
      limitWait: 'cs:auth:{client-1}:limit-wait',
      failure: 'cs:auth:{client-1}:failure',
      lock: 'cs:auth:{client-1}:lock',
      channel: 'cs:auth:{client-1}:events',
    });
  });

  it('Xero: the tokens and limits of a connection, the limit of an app', async () => {
    const p = testPrefix();
    const tokens = new XeroTokenStore(redis, p, 'org-1');
    const b = keyBase(p);
    expect([tokens.key, tokens.lockKey]).toEqual([`${b}:xero:{org-1}:oauth`, `${b}:xero:{org-1}:oauth-lock`]);
    await tokens.seed('fp', { cur: 'x', rotations: 0 });
    const limiter = limiterFor({ kind: 'xero', limits: xeroOAuth.limits }, redis, p, 'org-1', 'app-1');
    const lease = await limiter.acquire();
    for (const scope of ['minute', 'day', 'concurrent', 'app'] as const) await limiter.block(scope, 60_000);

    expect(await keysUnder(p)).toEqual(
      [
        `${b}:xero:app:{app-1}:block`,
        `${b}:xero:app:{app-1}:minute`,
        // A connection's limits share its app's tag: the limiter's script reads both at once.
        `${b}:xero:app:{app-1}:org:org-1:block:concurrent`,
        `${b}:xero:app:{app-1}:org:org-1:block:day`,
        `${b}:xero:app:{app-1}:org:org-1:block:minute`,
        `${b}:xero:app:{app-1}:org:org-1:day`,
        `${b}:xero:app:{app-1}:org:org-1:inflight`,
        `${b}:xero:app:{app-1}:org:org-1:minute`,
        `${b}:xero:{org-1}:oauth`,
      ].sort(),
    );
    await lease.release();
  });

  it('QuickBooks: the tokens and limits of a company, all under its realm tag', async () => {
    const p = testPrefix();
    const b = keyBase(p);
    const tokens = new PlatformTokenStore(redis, p, 'quickbooks', '9130346988751236');
    expect([tokens.key, tokens.lockKey]).toEqual([`${b}:quickbooks:{9130346988751236}:oauth`, `${b}:quickbooks:{9130346988751236}:oauth-lock`]);
    await tokens.seed('fp', { cur: 'x', rotations: 0 });
    const limiter = limiterFor({ kind: 'quickbooks', limits: quickBooksOAuth.limits }, redis, p, '9130346988751236', 'app');
    const lease = await limiter.acquire();
    for (const scope of ['minute', 'concurrent'] as const) await limiter.block(scope, 60_000);
    expect(await keysUnder(p)).toEqual(
      [
        `${b}:quickbooks:{9130346988751236}:limit:block:concurrent`,
        `${b}:quickbooks:{9130346988751236}:limit:block:minute`,
        `${b}:quickbooks:{9130346988751236}:limit:inflight`,
        `${b}:quickbooks:{9130346988751236}:limit:minute`,
        `${b}:quickbooks:{9130346988751236}:oauth`,
      ].sort(),
    );
    await lease.release();
    // What the adapter remembers of yielded records, one hash per entity, under the same tag.
    const memory = new QuickBooksMemory(redis, p, '9130346988751236');
    expect((['contacts', 'invoices', 'payments'] as const).map((e) => memory.key(e))).toEqual([
      `${b}:quickbooks:{9130346988751236}:seen:contacts`,
      `${b}:quickbooks:{9130346988751236}:seen:invoices`,
      `${b}:quickbooks:{9130346988751236}:seen:payments`,
    ]);
  });

  it("the control API's Idempotency-Key answers (under their tenant) and their index per API key name (its own tag)", async () => {
    const p = testPrefix();
    const store = new IdempotencyStore(redis, p);
    const claim = await store.claim('acme', 'backoffice', 'retry-1', 'POST /v1/tenants/acme/runs {}');
    if (claim.kind !== 'run') throw new Error(claim.kind);
    await claim.finish({ status: 202, body: '{}' });
    const b = keyBase(p);
    const digest = createHash('sha256').update('retry-1').digest('hex');
    expect(await keysUnder(p)).toEqual([`${b}:api:idempotency-index:{backoffice}`, `${b}:api:idempotency:{acme}:backoffice:${digest}`]);
  });

  it("connect: a tenant's binding and its outstanding links, under its tag", async () => {
    const prefix = testPrefix('keys');
    await new BindingStore(redis, prefix).set('acme', { platform: 'xero', connection: 'org-1', connectedAt: 1 });
    await new LinkStore(redis, prefix).add('acme', { id: 'Xq3b_2KfLw9Z', expiresAt: Date.now() + 60_000, reconnect: false, createdAt: 1, by: 'cli' });
    const base = keyBase(prefix);
    expect(await keysUnder(prefix)).toEqual([`${base}:connect:{acme}:binding`, `${base}:connect:{acme}:links`]);
  });

  it('each queue its own hash tag', () => {
    expect(queuePrefix('{cs}', 'sync')).toBe('cs:{sync}');
    expect(queuePrefix('{cs}', 'refresh-token')).toBe('cs:{refresh-token}');
  });

  it('the layout before issue 13, for migrate-keys', () => {
    expect(legacyKey('{cs}', 'ids', 'acme', 'contacts')).toBe('{cs}:ids:acme:contacts');
    expect(legacyKey('{cs}', ['calls', 'ledger'], 'acme', '+966501234567')).toBe('{cs}:calls:ledger:acme:+966501234567');
  });

  it('a tenant id that would reshape a key is refused', async () => {
    expect(() => tenantKey('{cs}', 'a:b', 'flags')).toThrow(/invalid tenant id/);
    await expect(new TenantFlags(redis, '{cs}').set('x/y', 'f', '1')).rejects.toThrow(/invalid tenant id/);
  });
});
