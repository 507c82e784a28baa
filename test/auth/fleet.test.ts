/**
 * Several worker processes (child processes, each with its own Redis connections, refresh-token Worker and
 * client at concurrency 30) hammer the simulator for a sustained period while short-lived tokens rotate:
 * no request fails, no request in flight is broken by a new token, and rotations stay near the minimum.
 * The protocol lives in fleet.ts (test/cluster/fleet.test.ts runs it on a Redis Cluster).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dropPrefix, useTestRedis } from '../helpers/redis.js';
import { CONCURRENCY, expectExpiredOnlyFromStalls, expectNothingBroken, fleetOn, PROCESSES, type Fleet } from './fleet.js';

const redis = useTestRedis();
let fleet: Fleet | undefined;

beforeAll(async () => {
  fleet = fleetOn(redis.url);
});
afterAll(async () => {
  await fleet?.cleanUp();
  for (const p of fleet?.prefixes ?? []) await dropPrefix(redis.url, p);
});

/**
 * The service's `exp` is in whole seconds (exp = floor((issued + lifetime) / 1000)), so a token rotated a margin
 * m < 1 s before its `exp` gets an `exp` exactly (lifetime - 1 s) later: with proactive rotation no schedule can
 * beat one token per (lifetime - 1 s). At a 4 s lifetime the naive minimum ceil(duration / lifetime) + 1 is
 * reachable and asserted (within one); at 2 s the floor is one token a second, and that is what is asserted.
 */
it(`${PROCESSES} processes x ${CONCURRENCY} concurrent requests, 4 s tokens, 10 s: nothing fails, nothing in flight is superseded, tokens within one of the minimum`, async () => {
  const r = await fleet!.run(4_000, 10_000);
  expectNothingBroken(r);
  expectExpiredOnlyFromStalls(r, 4_000, '4 s');
  expect(r.tokens).toBeLessThanOrEqual(Math.ceil(r.durationMs / 4_000) + 1 + 1);
});

it(`${PROCESSES} processes x ${CONCURRENCY} concurrent requests, 2 s tokens, 10 s: nothing fails, nothing in flight is superseded`, async () => {
  const r = await fleet!.run(2_000, 10_000);
  expectNothingBroken(r);
  expectExpiredOnlyFromStalls(r, 2_000, '2 s');
  // One token per (lifetime - 1 s) at best (see above), the first one, and one of slack.
  expect(r.tokens).toBeLessThanOrEqual(Math.ceil(r.durationMs / 1_000) + 1 + 1);
});

it(`${PROCESSES} processes x ${CONCURRENCY} concurrent requests, 2 s tokens told only by \`exp\` (no configured lifetime), 10 s: tokens rotated and leased by their own lifetime, near the minimum`, async () => {
  const r = await fleet!.run(2_000, 10_000, false);
  expectNothingBroken(r);
  expectExpiredOnlyFromStalls(r, 2_000, '2 s, exp only');
  // A token lives at most 2 s, so at least one per 2 s was needed; at best one per (lifetime - 1 s), plus the first and one of slack.
  expect(r.tokens).toBeGreaterThanOrEqual(Math.ceil(r.durationMs / 2_000));
  expect(r.tokens).toBeLessThanOrEqual(Math.ceil(r.durationMs / 1_000) + 1 + 1);
});
