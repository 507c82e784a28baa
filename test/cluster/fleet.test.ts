/**
 * Issue 13 item 5: the token fleet protocol of test/auth/fleet.test.ts (fleet.ts) on a three-master Redis Cluster
 * (REDIS_CLUSTER_NODES): several worker processes share one client's token, the token keys on the client's tag,
 * the refresh queue on its own. Nothing fails, nothing in flight is superseded at a rotation, tokens near the minimum.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CONCURRENCY, expectExpiredOnlyFromStalls, expectNothingBroken, fleetOn, PROCESSES, type Fleet } from '../auth/fleet.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';

let cluster: TestCluster;
let fleet: Fleet | undefined;

beforeAll(async () => {
  cluster = await startTestCluster();
  // The URL lends only credentials (none here): every connection goes to the cluster's nodes.
  fleet = fleetOn('redis://127.0.0.1:1', cluster.nodes);
}, 60_000);
afterAll(async () => {
  await fleet?.cleanUp();
  await cluster?.stop();
});

it(`on a cluster: ${PROCESSES} processes x ${CONCURRENCY} concurrent requests, 4 s tokens, 10 s: nothing fails, nothing in flight is superseded, tokens within one of the minimum`, async () => {
  const r = await fleet!.run(4_000, 10_000);
  expectNothingBroken(r);
  expectExpiredOnlyFromStalls(r, 4_000, 'cluster, 4 s');
  expect(r.tokens).toBeLessThanOrEqual(Math.ceil(r.durationMs / 4_000) + 1 + 1);
}, 60_000);

it(`on a cluster: ${PROCESSES} processes x ${CONCURRENCY} concurrent requests, 2 s tokens, 10 s: nothing fails, nothing in flight is superseded`, async () => {
  const r = await fleet!.run(2_000, 10_000);
  expectNothingBroken(r);
  expectExpiredOnlyFromStalls(r, 2_000, 'cluster, 2 s');
  // One token per (lifetime - 1 s) at best (fleet.test.ts), the first one, and one of slack.
  expect(r.tokens).toBeLessThanOrEqual(Math.ceil(r.durationMs / 1_000) + 1 + 1);
}, 60_000);
