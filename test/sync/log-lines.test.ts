/**
 * A run's log lines name their tenant once: the run's logger has it, and nothing adds it again (pino would print
 * the key twice). The run here logs at info and warn: started, a record stamped in the future, finished.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestSync } from '../../src/queues/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { waitForRun } from '../../src/state/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe("a run's log lines", () => {
  const server = useTestRedis();
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig({ redisUrl: server.url, tenants: [{ id: 'once', platform: { kind: 'memory', name: 'once' } }] });
  });
  afterAll(async () => rig?.close());

  it('name the tenant once each', async () => {
    const data = sampleData({ contacts: 5, seed: 37, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    const store = rig.memory.get('once');
    // One contact stamped a year ahead: the run warns that the cursor does not follow it.
    store.upsertMany('contacts', data.contacts.map((c, i) => (i === 0 ? { ...c, updatedAt: new Date(Date.now() + 365 * 86_400_000).toISOString() } : c)));
    store.upsertMany('invoices', data.invoices);
    const requestedAt = Date.now();
    await requestSync(rig.app.queues.sync, 'once', 'incremental', { trigger: 'test' });
    const run = await waitForRun(rig.app.stores.runs, 'once', { mode: 'incremental', requestedAt, timeoutMs: 30_000 });
    expect(run.outcome).toBe('succeeded');
    // The run's record is finished before its last line is logged: wait for that line.
    const linesOf = (): string[] => rig.logs.join('').split('\n').filter((l) => l.includes('"tenant":"once"'));
    await expect.poll(() => linesOf().some((l) => l.includes('"sync run finished"'))).toBe(true);
    const lines = linesOf();
    expect(lines.some((l) => l.includes('record stamped in the future')), 'the warning was logged').toBe(true);
    const twice = lines.filter((l) => l.split('"tenant":').length > 2);
    expect(twice, twice.slice(0, 3).join('\n')).toEqual([]);
  });
});
