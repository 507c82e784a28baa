/**
 * Every batch method costs one command (so one round trip) per call, whatever the page size: counted with
 * MONITOR on the store's own connection; commands run inside Lua are not the client's and are left out.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createStateStores, type StateStores } from '../../src/state/index.js';
import { spawnRedis, testPrefix, useTestRedis } from '../helpers/redis.js';
import { watchCommands, type CommandCounter } from './commands.js';

const PAGE = 1_000;
const ids = Array.from({ length: PAGE }, (_, i) => `r${i}`);

describe('batch methods: one round trip per call', () => {
  const server = useTestRedis();
  let redis: Redis;
  let counter: CommandCounter;
  let stores: StateStores;
  beforeAll(async () => {
    redis = new Redis(server.url);
    counter = await watchCommands(server.url, redis);
    stores = createStateStores(redis, testPrefix());
    // Load every script once (a server meets a script first through EVALSHA -> NOSCRIPT -> EVAL).
    const warm = 'warm';
    await stores.records.setMany(warm, 'contacts', [{ id: 'x', uuid: 'u' }]);
    await stores.records.clearHashes(warm);
    await stores.records.getMany(warm, 'contacts', ['x']);
    await stores.records.count(warm, 'contacts');
    await stores.deadLetters.add(warm, [{ entity: 'contacts', platformId: 'x', reason: 'r', code: 'c', runId: 'r', at: 1 }]);
    await stores.deadLetters.list(warm);
    await stores.deadLetters.counts(warm);
    await stores.deadLetters.remove(warm, ['contacts:id:x']);
    await stores.pending.add(warm, [{ id: 'x', record: {}, firstSeenAt: 1, waitingFor: 'c' }]);
    await stores.paymentLedger.setMany(warm, [{ invoiceId: 'i', paymentId: 'p', amount: 1, deleted: false }]);
    await stores.paymentLedger.totals(warm, ['i']);
    await stores.runs.start(warm, { runId: 'r', mode: 'full', startedAt: 1, trigger: 'test' });
    await stores.runs.update(warm, 'r', { phase: 'x' });
    await stores.runs.finish(warm, 'r', { outcome: 'succeeded', finishedAt: 2, counts: {}, errors: [] });
    await stores.runs.recent(warm);
    await stores.cursors.advance(warm, 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'a' });
  });
  afterAll(async () => {
    await counter.close();
    redis.disconnect();
  });

  const one = async (fn: () => Promise<unknown>): Promise<string[]> => {
    const sent = await counter.during(fn);
    expect(sent, `commands sent: ${sent.join(', ')}`).toHaveLength(1);
    return sent;
  };

  it('the counter sees every command (control: three single reads are three)', async () => {
    const sent = await counter.during(() => Promise.all(ids.slice(0, 3).map((id) => stores.records.get('acme', 'contacts', id))));
    expect(sent).toEqual([expect.stringMatching(/^EVALSHA /), expect.stringMatching(/^EVALSHA /), expect.stringMatching(/^EVALSHA /)]);
  });

  it('id map and content hash', async () => {
    expect(await one(() => stores.records.setMany('acme', 'invoices', ids.map((id, i) => ({ id, uuid: `u${i}`, hash: `h${i}` }))))).toEqual([
      expect.stringMatching(/^EVALSHA/),
    ]);
    await one(() => stores.records.setMany('acme', 'invoices', ids.map((id) => ({ id, hash: 'h2' }))));
    await one(async () => expect((await stores.records.getMany('acme', 'invoices', ids)).size).toBe(PAGE));
    await one(() => stores.records.count('acme', 'invoices'));
  });

  it('intents', async () => {
    await one(() => stores.intents.begin('acme', 'c1', { name: 'n', at: 1, runId: 'r' }));
    await one(() => stores.intents.getMany('acme', ids));
    await one(() => stores.intents.end('acme', ids));
  });

  it('dead letters', async () => {
    const entries = ids.map((id) => ({ entity: 'invoices' as const, platformId: id, reason: 'r', code: 'c', runId: 'r', at: 5, record: { id } }));
    await one(() => stores.deadLetters.add('acme', entries));
    await one(() => stores.deadLetters.add('acme', entries));
    await one(async () => expect(await stores.deadLetters.list('acme', { limit: 100 })).toHaveLength(100));
    await one(async () => expect((await stores.deadLetters.take('acme', { limit: 500 })).entries).toHaveLength(500));
    await one(async () => expect((await stores.deadLetters.counts('acme')).total).toBe(PAGE));
    await one(async () => expect(await stores.deadLetters.remove('acme', ids.map((platformId) => ({ entity: 'invoices' as const, platformId })))).toBe(PAGE));
  });

  it('pending invoices', async () => {
    await one(() => stores.pending.add('acme', ids.map((id) => ({ id, record: { id }, firstSeenAt: 1, waitingFor: 'c' }))));
    await one(async () => expect(await stores.pending.list('acme')).toHaveLength(PAGE));
    await one(() => stores.pending.remove('acme', ids));
  });

  it('payment ledger', async () => {
    await one(() => stores.paymentLedger.setMany('acme', ids.map((id, i) => ({ invoiceId: `i${i % 300}`, paymentId: id, amount: 1.25, deleted: i % 10 === 0 }))));
    const invoices = Array.from({ length: 300 }, (_, i) => `i${i}`);
    await one(async () => expect((await stores.paymentLedger.totals('acme', invoices)).size).toBe(300));
    await one(() => stores.paymentLedger.invoicesOf('acme', ids));
  });

  it('run history', async () => {
    await one(() => stores.runs.start('acme', { runId: 'run-1', mode: 'incremental', startedAt: 1, trigger: 'test' }));
    await one(() => stores.runs.increment('acme', 'run-1', { created: 10, updated: 3, skipped: 900, requests: 13 }));
    await one(() => stores.runs.update('acme', 'run-1', { counts: { created: 11 }, phase: 'invoices' }));
    await one(() => stores.runs.finish('acme', 'run-1', { outcome: 'succeeded', finishedAt: 2, counts: { created: 11 }, errors: [] }));
    // A read of the index and the compact lines together, then every run it names at once: two round trips (the
    // script is given each run's key).
    const sent = await counter.during(async () => expect(await stores.runs.recent('acme', 100)).toHaveLength(1));
    expect(sent.map((c) => c.split(' ')[0])).toEqual(['ZREVRANGE', 'LRANGE', 'EVALSHA']);
  });

  it('cursors and checkpoint (an advance is a read and a check-and-set: two)', async () => {
    await one(() => stores.cursors.saveCheckpoint('acme', 'run-1', 'invoices', { pageToken: 't', counts: {} }));
    await one(() => stores.cursors.getCheckpoint('acme'));
    const sent = await counter.during(() => stores.cursors.advance('acme', 'invoices', { updatedAt: '2026-02-01T00:00:00Z', id: 'x' }));
    expect(sent).toHaveLength(2);
  });

  it('a server that lost its scripts costs one extra command, then none', async () => {
    // A private server: SCRIPT FLUSH must not touch a Redis other test files share.
    const own = await spawnRedis({ appendonly: false });
    onTestFinished(() => own.stop());
    const client = new Redis(own.url);
    onTestFinished(() => client.disconnect());
    const watch = await watchCommands(own.url, client);
    onTestFinished(() => watch.close());
    const s = createStateStores(client, testPrefix());
    await s.records.setMany('acme', 'contacts', [{ id: 'c', uuid: 'u' }]);
    await client.script('FLUSH');
    const first = await watch.during(() => s.records.setMany('acme', 'contacts', [{ id: 'c', hash: 'h' }]));
    expect(first.map((c) => c.split(' ')[0])).toEqual(['EVALSHA', 'EVAL']);
    const then = await watch.during(() => s.records.setMany('acme', 'contacts', [{ id: 'c', hash: 'h2' }]));
    expect(then.map((c) => c.split(' ')[0])).toEqual(['EVALSHA']);
    expect(await s.records.get('acme', 'contacts', 'c')).toEqual({ uuid: 'u', hash: 'h2' });
  });
});
