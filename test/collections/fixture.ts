/** The simulator on 127.0.0.1:0 and a client on it, for the collections tests. */
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { Secret } from '../../src/secret.js';
import { CollectionsClient, type CollectionsClientOptions, type RequestEvent } from '../../src/collections/client.js';
import { StaticTokenProvider } from '../../src/collections/static-token-provider.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

export const CLIENT_ID = 'tenant-a';
export const CLIENT_SECRET = 'sekret-tenant-a-0123456789';

export interface Fixture {
  sim: Simulator;
  tokens: StaticTokenProvider;
  client: CollectionsClient;
  events: RequestEvent[];
  /** Another client on the same simulator, with its own options. */
  makeClient(o?: Partial<CollectionsClientOptions>): CollectionsClient;
  close(): Promise<void>;
}

export async function startFixture(): Promise<Fixture> {
  const sim = await startSimulator({ clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }] });
  const tokens = new StaticTokenProvider({ authUrl: sim.authUrl, clientId: CLIENT_ID, clientSecret: new Secret(CLIENT_SECRET) });
  const events: RequestEvent[] = [];
  const made: CollectionsClient[] = [];
  const makeClient = (o: Partial<CollectionsClientOptions> = {}) => {
    const c = new CollectionsClient({ baseUrl: sim.baseUrl, tokens, backoff: { baseMs: 20, maxMs: 100 }, onRequest: (e) => events.push(e), ...o });
    made.push(c);
    return c;
  };
  const client = makeClient();
  return {
    sim,
    tokens,
    client,
    events,
    makeClient,
    async close() {
      await Promise.all(made.map((c) => c.close()));
      await sim.close();
    },
  };
}

/** How many requests the simulator counted on `route` with `status` ('200', '401', 'drop', ...). */
export function count(sim: Simulator, route: string, status?: string): number {
  const byStatus = sim.counters().requests[route] ?? {};
  if (status !== undefined) return byStatus[status] ?? 0;
  return Object.values(byStatus).reduce((a: number, b: number) => a + b, 0);
}

export { caught, memoryStream } from './util.js';

/**
 * One fixture per test file: started before the file's tests, closed after them, and before each test the
 * simulator's faults, counters and the client's recorded events are cleared. `set` receives it once up.
 */
export function useFixture(set: (f: Fixture) => void): void {
  let fixture: Fixture | undefined;
  beforeAll(async () => {
    fixture = await startFixture();
    set(fixture);
  });
  afterAll(async () => {
    await fixture?.close();
  });
  beforeEach(() => {
    fixture?.sim.setFaults({ script: [], latencyMs: 0 });
    fixture?.sim.resetCounters();
    if (fixture) fixture.events.length = 0;
  });
}
