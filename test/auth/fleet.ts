/**
 * The token fleet protocol (test/auth/fleet.test.ts on one Redis, test/cluster/fleet.test.ts on a Redis Cluster):
 * several worker processes (child processes, each with its own Redis connections, refresh-token Worker and client
 * at concurrency 30) hammer the simulator for a sustained period while short-lived tokens rotate; the report says
 * what failed, which tokens were issued and what the service saw.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect } from 'vitest';
import type { AuthSettingsInput } from '../../src/auth/settings.js';
import { resolveAuthSettings, tokenPlan } from '../../src/auth/settings.js';
import { Secret } from '../../src/secret.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { testPrefix } from '../helpers/redis.js';
import { spawnChild, type Child } from './children.js';
import type { ChildSummary } from './fleet-child.js';
import { buildRig, type AuthRig } from './harness.js';

/** Where a fleet runs: a Redis (`url`), or a Redis Cluster (`clusterNodes`); what it leaves to clean up. */
interface FleetRedis {
  url: string;
  clusterNodes?: string;
  children: Child[];
  prefixes: string[];
  closers: (() => Promise<void>)[];
}

export interface Fleet {
  /** The key prefixes of every run (for dropPrefix on a shared Redis). */
  readonly prefixes: readonly string[];
  /** One fleet run: `configured` false leaves the lifetime to the token's `exp`. */
  run(lifetimeMs: number, durationMs: number, configured?: boolean): Promise<FleetReport>;
  /** Kills what a failed run left behind (children, the rig, the simulator). */
  cleanUp(): Promise<void>;
}

/** Fleets on the Redis at `url`, or on the Redis Cluster of `clusterNodes` (REDIS_CLUSTER_NODES) when given. */
export function fleetOn(url: string, clusterNodes?: string): Fleet {
  const f: FleetRedis = { url, ...(clusterNodes === undefined ? {} : { clusterNodes }), children: [], prefixes: [], closers: [] };
  return {
    prefixes: f.prefixes,
    run: (lifetimeMs, durationMs, configured = true) => runFleet(f, lifetimeMs, durationMs, configured),
    async cleanUp() {
      for (const c of f.children) await c.kill();
      for (const close of f.closers) await close();
    },
  };
}

/**
 * Token lifetime. The service's `exp` is in whole seconds (exp = floor((issued + lifetime) / 1000)), so a token
 * rotated a margin m < 1 s before its `exp` gets an `exp` exactly (lifetime - 1 s) later: with proactive rotation
 * no schedule can beat one token per (lifetime - 1 s). At 2 s that is one token a second, twice the naive
 * ceil(duration / lifetime). 4 s keeps rotations frequent (every 3 s) and the naive bound reachable.
 */
export const PROCESSES = 3;
export const CONCURRENCY = 30;
const IN_FLIGHT_LIMIT = 64;

export interface FleetReport {
  ok: number;
  failed: number;
  errors: Record<string, number>[];
  durationMs: number;
  tokens: number;
  rotations: Record<string, number>;
  counters: ReturnType<Simulator['counters']>;
  /** Event-loop delay of the children and of this process (it hosts the simulator), ms. */
  loopDelayMaxMs: { children: number[]; simulator: number };
  expiredLeases: ChildSummary['expiredLeases'];
  /** 401 `expired` the children reported to their provider (and retried). */
  expiredRetried: number;
  settings: AuthSettingsInput;
}

/**
 * `configured`: the workers are told the lifetime (TOKEN_LIFETIME_S); false: they are not (the default 300 s
 * stands) and only the token's `exp` tells it.
 */
async function runFleet(fleetRedis: FleetRedis, lifetimeMs: number, durationMs: number, configured: boolean): Promise<FleetReport> {
  const { url, clusterNodes, children, prefixes } = fleetRedis;
  let sim: Simulator | undefined = await startSimulator({ clients: [{ clientId: 'c1', clientSecret: 's1' }], tokenLifetimeMs: lifetimeMs, faults: { latencyMs: 10, jitterMs: 8 } });
  const prefix = testPrefix('fleet');
  prefixes.push(prefix);
  const settings: AuthSettingsInput = {
    requestTimeoutMs: 5_000,
    drainBoundMs: 2_000,
    tokenCallTimeoutMs: 2_000,
    ...(configured ? { lifetimeMs } : {}),
    marginFraction: 0.2,
    inFlightLimit: IN_FLIGHT_LIMIT,
    pollMs: 100,
  };
  const tenants = [{ id: 't1', clientId: 'c1', secret: 's1' }];
  // The one place that upserts the schedulers (the worker's start in production).
  const onCluster = clusterNodes === undefined ? {} : { clusterNodes };
  let rig: AuthRig | undefined = await buildRig({ url, ...onCluster, prefix, authUrl: sim.authUrl, settings });
  fleetRedis.closers.push(async () => {
    await rig?.close();
    await sim?.close();
  });
  await rig.auth.ensureSchedules([{ id: 't1', collections: { clientId: 'c1', clientSecret: new Secret('s1') } }]);
  expect((await rig.queue.getJobSchedulers()).map((s) => s.every)).toEqual([resolveAuthSettings(settings).scheduleEveryMs]);

  const fleet: Child[] = [];
  for (let i = 0; i < PROCESSES; i++) {
    fleet.push(
      spawnChild({
        redisUrl: url, ...onCluster, prefix, authUrl: sim.authUrl, baseUrl: sim.baseUrl, tenants, tenantId: 't1', settings: settings as Record<string, number>,
        startAt: 0, durationMs, concurrency: CONCURRENCY, runWorker: true,
      }),
    );
  }
  children.push(...fleet);
  await Promise.all(fleet.map((c) => c.next('ready', 30_000)));
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  for (const c of fleet) c.go();
  const summaries = await Promise.all(fleet.map((c) => c.done));
  loop.disable();
  const counters = sim.counters();
  await rig.close();
  rig = undefined;
  await sim.close();
  sim = undefined;

  const rotations = summaries.reduce<Record<string, number>>((m, s) => {
    for (const [k, v] of Object.entries(s.rotations)) m[k] = (m[k] ?? 0) + v;
    return m;
  }, {});
  const report: FleetReport = {
    ok: summaries.reduce((n, s) => n + s.ok, 0),
    failed: summaries.reduce((n, s) => n + s.failed, 0),
    errors: summaries.map((s) => s.errors),
    durationMs: Math.max(...summaries.map((s) => s.endedAt)) - Math.min(...summaries.map((s) => s.startedAt)),
    tokens: counters.tokensIssued['c1'] ?? 0,
    rotations,
    counters,
    loopDelayMaxMs: { children: summaries.map((s) => s.loopDelayMaxMs), simulator: Math.round(loop.max / 1e6) },
    expiredLeases: summaries.flatMap((s) => s.expiredLeases),
    expiredRetried: summaries.reduce((n, s) => n + s.expired, 0),
    settings,
  };
  if (process.env['AUTH_TEST_REPORT']) {
    const measured = {
      redis: clusterNodes === undefined ? 'single' : 'cluster', lifetimeMs, configured, ok: report.ok, failed: report.failed, durationMs: report.durationMs, rps: Math.round((report.ok / report.durationMs) * 1000),
      tokens: report.tokens, rotations, unauthorized: counters.unauthorized, supersededInFlight: counters.supersededInFlight,
      maxConcurrency: counters.maxConcurrencyByClient['c1'], gateWaits: summaries.reduce((n, s) => n + s.gateWaits, 0),
      gateWaitMaxMs: Math.max(...summaries.map((s) => s.gateWaitMaxMs)), maxGapMs: Math.max(...summaries.map((s) => s.maxGapMs)),
      p50Ms: summaries.map((s) => s.p50Ms), p99Ms: summaries.map((s) => s.p99Ms),
      loopDelayMaxMs: report.loopDelayMaxMs, loopDelayP99Ms: summaries.map((s) => s.loopDelayP99Ms),
      expiredLeases: report.expiredLeases.slice(0, 10),
    };
    process.stderr.write(`fleet: ${JSON.stringify(measured)}\n`);
  }
  return report;
}

export function expectNothingBroken(r: FleetReport): void {
  expect(r.errors).toEqual(r.errors.map(() => ({})));
  expect(r.failed).toBe(0);
  // Every loop of every process landed requests. (Not a rate: a starved machine makes ten times fewer; 679 in
  // 10 s were measured beside a full parallel suite, where this once asked for more than 900.)
  expect(r.ok).toBeGreaterThanOrEqual(PROCESSES * CONCURRENCY);
  expect(r.counters.supersededInFlight).toBe(0);
  expect(r.counters.unauthorized.superseded).toBe(0);
  expect(r.counters.unauthorized.invalid).toBe(0);
  // Each rotation is counted once, by the process that made it; the service saw exactly those tokens.
  expect(Object.values(r.rotations).reduce((a, b) => a + b, 0)).toBe(r.tokens);
  expect(r.tokens).toBeGreaterThanOrEqual(Math.ceil(r.durationMs / 4_000));
  // The in-flight limit holds across processes.
  expect(r.counters.maxConcurrencyByClient['c1']).toBeLessThanOrEqual(IN_FLIGHT_LIMIT);
}

/**
 * 401 `expired` (issues 12 and 18). The protocol never leases a token within its lease floor (protocol.test.ts
 * holds that against Redis) and plans each rotation for its token's margin, so a lease is taken with at least the
 * floor of life left, and a request that still reaches the service after its token's expiry was held up at least
 * that long between `acquire()` and the service's check: a starved process on a loaded machine (measured with
 * monitorEventLoopDelay in every child and in this process, which hosts the simulator; shown below). Such 401s
 * are tolerated, each on three conditions: it was asked for with at least the floor of life left (so the code did
 * not lease too late: the old code leased up to the expiry and fails here), the client reported it and retried
 * (the children count exactly the service's 401s) and the request landed (nothing failed). The count is printed.
 * A 401 caused by a rotation (`superseded`) is never tolerated (expectNothingBroken).
 */
export function expectExpiredOnlyFromStalls(r: FleetReport, lifetimeMs: number, label: string): void {
  // The shortest lifetime a token of this service can show (its `exp` is in whole seconds), so the smallest floor.
  const floorMs = tokenPlan(resolveAuthSettings(r.settings), lifetimeMs - 1_000).leaseFloorMs;
  const expired = r.counters.unauthorized.expired;
  process.stderr.write(
    `fleet ${label}: ${expired} expired 401s (each retried and landed), lease floor ${floorMs} ms, ` +
      `event-loop delay max ${JSON.stringify(r.loopDelayMaxMs)} ms${expired > 0 ? `, leases: ${JSON.stringify(r.expiredLeases.slice(0, 5))}` : ''}\n`,
  );
  expect(r.expiredRetried).toBe(expired);
  for (const e of r.expiredLeases) expect(e.leftAtAcquireMs).toBeGreaterThanOrEqual(floorMs);
}

