/**
 * Runs every Lua script of every room at least once (most of them on their main path), and the one MULTI, for one
 * tenant, client, connection and campaign: test/redis/declared-keys.test.ts watches it with MONITOR,
 * test/cluster/scripts.test.ts runs it on a Redis Cluster (a script or MULTI over two slots fails there).
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { ClientAuthStore } from '../../src/auth/index.js';
import { CallLedger, CampaignStore } from '../../src/calls/index.js';
import { limiterFor } from '../../src/platforms/oauth/rate-limiter.js';
import { quickBooksOAuth } from '../../src/platforms/quickbooks/oauth.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';
import { PlatformTokenStore, XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { RedisLock } from '../../src/redis/lock.js';
import { createStateStores } from '../../src/state/index.js';
import { packOldEntries } from '../../src/state/old-hashes.js';
import { RecordMirror } from '../../src/state/record-mirror.js';
import { TenantStore } from '../../src/state/tenant-store.js';
import { EventLog } from '../../src/state/event-log.js';
import { tenantEvent } from '../../src/notify/events.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';

export interface Owners {
  tenant: string;
  client: string;
  connection: string;
  app: string;
  campaign: string;
}

export const DEFAULT_OWNERS: Owners = { tenant: 'acme', client: 'client-1', connection: 'org-1', app: 'app-1', campaign: 'cmp-a' };

/** Runs every script of every room at least once (most of them on their main path). */
export async function runEveryScript(redis: Redis, p: string, o: Owners = DEFAULT_OWNERS): Promise<void> {
  const { tenant, client, connection, app, campaign } = o;
  const s = createStateStores(redis, p);
  await s.intents.beginMany(tenant, [{ platformId: 'c1', name: 'n', at: 1, runId: 'run-1' }]);
  await s.records.setMany(tenant, 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h1' }], { endIntents: ['c1'] });
  await s.records.setMany(tenant, 'contacts', [{ id: 'c2', uuid: 'u2', hash: 'h2' }]);
  // An entry of the id map before packed records: packed by migrate-keys' packing (no other script reads it).
  await redis.hset(s.records.oldKey(tenant, 'contacts'), 'c3', 'u3|h3');
  expect(await packOldEntries(redis, p, tenant, true)).toBe(1);
  await s.records.getMany(tenant, 'contacts', ['c1', 'c3']);
  await s.records.count(tenant, 'contacts');
  for await (const batch of s.records.scan(tenant, 'contacts')) expect(batch.length).toBeGreaterThan(0);
  await s.records.clearHashes(tenant);
  const mirror = new RecordMirror(redis, p);
  await mirror.putMany(tenant, 'contacts', [{ id: 'c1', name: 'n', deleted: false, uuid: 'u1' }]);
  await mirror.getMany(tenant, 'contacts', ['c1']);
  for await (const batch of mirror.scan(tenant, 'contacts')) expect(batch.length).toBeGreaterThan(0);
  await s.cursors.advance(tenant, 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'c1' });
  await s.deadLetters.add(tenant, [{ entity: 'invoices', platformId: 'i1', reason: 'r', code: 'c', runId: 'run-1', at: 1 }]);
  await s.deadLetters.list(tenant);
  await s.deadLetters.counts(tenant);
  await s.deadLetters.remove(tenant, [{ entity: 'invoices', platformId: 'i1' }]);
  await s.deadLetters.prune(tenant, Date.now());
  await s.pending.add(tenant, [{ id: 'i2', record: {}, firstSeenAt: 1, waitingFor: 'c9' }]);
  await s.paymentLedger.setMany(tenant, [{ invoiceId: 'i1', paymentId: 'p1', amount: 1, deleted: false }]);
  await s.paymentLedger.totals(tenant, ['i1']);
  await s.paymentLedger.invoicesOf(tenant, ['p1']);
  // Three runs kept to two, one of them in full: the oldest is trimmed, the second cut to a compact line.
  for (const i of [1, 2, 3]) await s.runs.start(tenant, { runId: `run-${i}`, mode: 'full', startedAt: i, trigger: 'test' }, 2, { detailed: 1 });
  await s.runs.increment(tenant, 'run-3', { created: 1 });
  await s.runs.finish(tenant, 'run-3', { outcome: 'succeeded', finishedAt: 4, counts: { created: 1 }, errors: [] });
  expect((await s.runs.recent(tenant)).map((r) => r.runId)).toEqual(['run-3', 'run-2']);

  const lock = new RedisLock(redis, `${p}:lock:test:${tenant}`, 10_000);
  await lock.acquire();
  await lock.extend();
  await lock.release();

  const auth = new ClientAuthStore(redis, p, client);
  const rotation = new RedisLock(redis, auth.keys.lock, 10_000, 'owner');
  await rotation.acquire();
  await auth.closeGate('owner', 5_000);
  await auth.leaseCount();
  await auth.store('owner', 0, 'tok', Date.now() + 60_000);
  await auth.recordFailure('owner', 'rejected', 'fp', 1_000, 10_000);
  await auth.openGate('owner');
  await auth.acquire('lease-1', 5_000, 10, 'fp');
  await auth.release('lease-1');
  const pooled = await auth.acquireMany('pool-1', 3, 1, 5_000, 10, 'fp');
  const pooledIds = pooled.kind === 'ok' ? pooled.leaseIds : [];
  await auth.renew(pooledIds.slice(1), pooledIds.slice(0, 1), 5_000, 2);
  await auth.release(...pooledIds);
  await auth.state();

  const number = '+966501234567';
  const ledger = new CallLedger(redis, p, { cooldownMs: 60_000 });
  await ledger.reserve(tenant, campaign, 0, [number]);
  await ledger.called(tenant, campaign, 0, [number]);
  const campaigns = new CampaignStore(redis, p);
  const meta = { id: campaign, tenant, source: 'list', dryRun: false, createdAt: Date.now(), status: 'queued' } as const;
  await campaigns.create(meta, [{ number, label: 'x', contact: { numberToCall: number } }]);
  await campaigns.storePlan(meta, { requests: [{ index: 0, state: 'planned', updatedAt: 1 }], entries: [], skipped: [] });
  await campaigns.transition(campaign, 'planned', { index: 0, state: 'sending', updatedAt: 2 });

  const tokens = new XeroTokenStore(redis, p, connection);
  await tokens.seed('fp', { cur: 'x', rotations: 0 });
  await redis.set(tokens.lockKey, 'owner');
  await tokens.commit(1, 'owner', { cur: 'y', rotations: 1 });
  await tokens.connect('owner', 'connect-fp', 'fp', { cur: 'z', rotations: 0 });
  expect(await tokens.markUndecryptable({ at: 1, reason: 'another key' })).toBe(true);
  const limiter = limiterFor({ kind: 'xero', limits: xeroOAuth.limits }, redis, p, connection, app);
  await (await limiter.acquire()).release();
  await limiter.block('minute', 1_000);
  const realm = new PlatformTokenStore(redis, p, 'quickbooks', connection);
  await realm.seed('fp', { cur: 'x', rotations: 0 });
  // A rotation: the same file token's fingerprint under the old key counts as seen.
  expect(await realm.seed('fp-new', { cur: 'x2', rotations: 0 }, 'fp')).toBe(0);
  await realm.commitAt(1, { cur: 'y', rotations: 1 });
  const realmLimiter = limiterFor({ kind: 'quickbooks', limits: quickBooksOAuth.limits }, redis, p, connection, 'app');
  await (await realmLimiter.acquire()).release();

  // A tenant created over the API, changed and removed (its document's check-and-set, its change filed each time).
  const stored = new TenantStore(redis, p, TokenCipher.fromText(randomBytes(32).toString('base64')), { removedKept: 1 });
  await stored.create({ id: tenant, collections: { clientId: client, clientSecret: 'secret-x9' }, platform: { kind: 'memory', name: tenant } });
  expect((await stored.patch(tenant, { inFlightLimit: 2 })).kind).toBe('patched');
  expect(await stored.remove(tenant)).toBe(true);
  await stored.create({ id: `${tenant}-2`, collections: { clientId: client, clientSecret: 'secret-x9' }, platform: { kind: 'memory', name: tenant } });
  expect(await stored.remove(`${tenant}-2`)).toBe(true);

  // The run webhooks' event log: an event recorded (trimming by count and age) and a page read.
  const events = new EventLog(redis, p, { maxCount: 1, maxAgeMs: 60_000 });
  for (const at of [1, 2]) await events.record(tenantEvent({ type: 'tenant.deleted', tenantId: tenant, source: 'api', at: Date.now() + at }), { state: 'pending', attempts: 0 });
  expect((await events.page({ limit: 10, tenants: [tenant] })).items).toHaveLength(1);
}

