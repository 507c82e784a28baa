/**
 * Every Lua script receives every key it touches as KEYS (a script that builds a key name inside Lua breaks on
 * Redis Cluster, which routes a script by its KEYS). Watched with MONITOR: each command a script runs shows as
 * `lua` right after the EVAL/EVALSHA that ran it, and Redis's own COMMAND GETKEYS names that command's keys.
 * Every script made by our code (LuaScript.made) is run here, so a new one cannot slip past.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientAuthStore } from '../../src/auth/index.js';
import { CallLedger, CampaignStore } from '../../src/calls/index.js';
import { XeroRateLimiter } from '../../src/platforms/xero/rate-limiter.js';
import { XeroTokenStore } from '../../src/platforms/xero/token-store.js';
import { RedisLock } from '../../src/redis/lock.js';
import { LuaScript, NOW_MS } from '../../src/redis/script.js';
import { createStateStores } from '../../src/state/index.js';
import { LUA_HELPERS } from '../../src/state/script.js';
import { startTestRedis, testPrefix, type TestRedis } from '../helpers/redis.js';

/** A script's first own line (after the shared helpers), to find it by. */
function name(script: LuaScript | undefined): string | undefined {
  return script?.source.replace(LUA_HELPERS, '').replace(NOW_MS, '').trim().split('\n')[0];
}

interface Seen {
  args: string[];
  source: string;
}

/** Runs every script of every room at least once (most of them on their main path). */
async function runEveryScript(redis: Redis, p: string): Promise<void> {
  const s = createStateStores(redis, p);
  await s.intents.beginMany('acme', [{ platformId: 'c1', name: 'n', at: 1, runId: 'run-1' }]);
  await s.records.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h1' }], { endIntents: ['c1'] });
  await s.records.setMany('acme', 'contacts', [{ id: 'c2', uuid: 'u2', hash: 'h2' }]);
  await s.records.clearHashes('acme');
  await s.cursors.advance('acme', 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'c1' });
  await s.deadLetters.add('acme', [{ entity: 'invoices', platformId: 'i1', reason: 'r', code: 'c', runId: 'run-1', at: 1 }]);
  await s.deadLetters.list('acme');
  await s.deadLetters.counts('acme');
  await s.deadLetters.remove('acme', [{ entity: 'invoices', platformId: 'i1' }]);
  await s.deadLetters.prune('acme', Date.now());
  await s.pending.add('acme', [{ id: 'i2', record: {}, firstSeenAt: 1, waitingFor: 'c9' }]);
  await s.paymentLedger.setMany('acme', [{ invoiceId: 'i1', paymentId: 'p1', amount: 1, deleted: false }]);
  await s.paymentLedger.totals('acme', ['i1']);
  // Three runs kept to two: the oldest is trimmed.
  for (const i of [1, 2, 3]) await s.runs.start('acme', { runId: `run-${i}`, mode: 'full', startedAt: i, trigger: 'test' }, 2);
  await s.runs.increment('acme', 'run-3', { created: 1 });
  expect((await s.runs.recent('acme')).map((r) => r.runId)).toEqual(['run-3', 'run-2']);

  const lock = new RedisLock(redis, `${p}:lock:test`, 10_000);
  await lock.acquire();
  await lock.extend();
  await lock.release();

  const auth = new ClientAuthStore(redis, p, 'client-1');
  const rotation = new RedisLock(redis, auth.keys.lock, 10_000, 'owner');
  await rotation.acquire();
  await auth.closeGate('owner', 5_000);
  await auth.leaseCount();
  await auth.store('owner', 0, 'tok', Date.now() + 60_000);
  await auth.recordFailure('owner', 'rejected', 'fp', 1_000, 10_000);
  await auth.openGate('owner');
  await auth.acquire('lease-1', 5_000, 10, 'fp');
  await auth.release('lease-1');
  await auth.state();

  const number = '+966501234567';
  const ledger = new CallLedger(redis, p, { cooldownMs: 60_000 });
  await ledger.reserve('acme', 'cmp-a', 0, [number]);
  await ledger.called('acme', 'cmp-a', 0, [number]);
  const campaigns = new CampaignStore(redis, p);
  const meta = { id: 'cmp-a', tenant: 'acme', source: 'list', dryRun: false, createdAt: Date.now(), status: 'queued' } as const;
  await campaigns.create(meta);
  await campaigns.storePlan(meta, { requests: [{ index: 0, state: 'planned', updatedAt: 1 }], entries: [], skipped: [] });
  await campaigns.transition('cmp-a', 'planned', { index: 0, state: 'sending', updatedAt: 2 });

  const tokens = new XeroTokenStore(redis, p, 'org-1');
  await tokens.seed('fp', { cur: 'x', rotations: 0 });
  await redis.set(tokens.lockKey, 'owner');
  await tokens.commit(1, 'owner', { cur: 'y', rotations: 1 });
  const limiter = new XeroRateLimiter(redis, p, 'org-1', 'app-1');
  await (await limiter.acquire()).release();
  await limiter.block('minute', 1_000);
}

describe('Lua scripts and their keys', () => {
  let server: TestRedis;
  let redis: Redis;
  let monitor: Redis;
  const seen: Seen[] = [];
  const markers = new Map<string, () => void>();

  beforeAll(async () => {
    server = await startTestRedis();
    redis = new Redis(server.url);
    monitor = await new Redis(server.url).monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args[0]?.toLowerCase() === 'echo' && args[1] !== undefined && markers.has(args[1])) markers.get(args[1])?.();
      else seen.push({ args, source });
    });
  });
  afterAll(async () => {
    monitor?.disconnect();
    redis?.disconnect();
    await server?.stop();
  });

  /** Waits until MONITOR has shown everything sent so far. */
  const flush = async (): Promise<void> => {
    const marker = `declared-keys-${randomBytes(6).toString('hex')}`;
    const arrived = new Promise<void>((resolve) => markers.set(marker, resolve));
    await redis.echo(marker);
    await arrived;
  };

  /**
   * The keys of one command, by Redis's own key spec. A command without keys (TIME, PUBLISH) is refused by
   * GETKEYS: it ran in the script, so its arguments were right, and it has no key to declare.
   */
  const keysOf = async (args: string[]): Promise<string[]> => {
    try {
      return (await redis.call('COMMAND', 'GETKEYS', ...args)) as string[];
    } catch (err) {
      if (/no key arguments|wrong number of arguments/i.test((err as Error).message)) return [];
      throw err;
    }
  };

  it('every key a script touches is one of its KEYS, for every script our code makes', async () => {
    const p = testPrefix('declared');
    await runEveryScript(redis, p);
    await flush();

    const bySha = new Map([...LuaScript.made].map((s) => [s.sha, s]));
    const ran = new Set<string>();
    const undeclared: string[] = [];
    let current: { sha: string; keys: Set<string> } | undefined;
    const lastSha = new Map<string, string>();
    for (const { args, source } of seen) {
      const cmd = (args[0] ?? '').toLowerCase();
      if (source !== 'lua') {
        if (cmd !== 'eval' && cmd !== 'evalsha') continue;
        // MONITOR shows a script's source escaped; an EVAL of ours is the fallback of the EVALSHA just before it.
        if (cmd === 'evalsha') lastSha.set(source, args[1] ?? '');
        const sha = cmd === 'eval' ? (lastSha.get(source) ?? 'a raw EVAL') : (args[1] ?? '');
        current = { sha, keys: new Set(args.slice(3, 3 + Number(args[2]))) };
        continue;
      }
      if (!current) throw new Error(`a command ran in Lua before any script: ${args.join(' ')}`);
      ran.add(current.sha);
      for (const k of await keysOf(args)) {
        if (current.keys.has(k)) continue;
        undeclared.push(`${args[0]} ${k} (script: ${name(bySha.get(current.sha)) ?? current.sha})`);
      }
    }

    expect(undeclared).toEqual([]);
    const never = [...LuaScript.made].filter((s) => !ran.has(s.sha)).map(name);
    expect(never, 'scripts this test never ran: run them in runEveryScript').toEqual([]);
  });
});
