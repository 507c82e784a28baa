/**
 * `collections-sync jobs contract` (decision 110): printed from the job table for the configured KEY_PREFIX with
 * no Redis, and its JSON Schema says what the worker's zod schema says. The printed schema is read back with
 * zod 4's own JSON Schema reader (`z.fromJSONSchema`) and both are asked about the same valid and invalid
 * payloads: every answer must agree, and the valid ones must be accepted.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { JobContract } from '../../src/queues/contract.js';
import { JOBS } from '../../src/queues/index.js';
import { runContract } from '../helpers/contract.js';

// Nothing answers here: the command must not need Redis (nor a tenants file).
const NO_REDIS = { REDIS_URL: 'redis://127.0.0.1:1', TENANTS_FILE: '/nonexistent/tenants.json' };

const now = Date.now();
const valid: unknown[] = [
  { tenantId: 'acme', mode: 'incremental', trigger: 'external', requestedAt: now },
  { tenantId: 'acme', mode: 'full', since: '2026-01-01', trigger: 'external', requestedAt: now },
  { tenantId: 'globex_2', mode: 'reconcile', trigger: 'api', requestedAt: Date.UTC(2000, 0, 1) },
  { tenantId: 'a', mode: 'replay', trigger: 'external', requestedAt: Date.UTC(2100, 0, 1) },
];
const invalid: Record<string, unknown> = {
  'no trigger': { tenantId: 'acme', mode: 'full', requestedAt: now },
  'an unknown trigger': { tenantId: 'acme', mode: 'full', trigger: 'manual', requestedAt: now },
  'requestedAt in seconds': { tenantId: 'acme', mode: 'full', trigger: 'external', requestedAt: Math.floor(now / 1000) },
  'requestedAt in microseconds': { tenantId: 'acme', mode: 'full', trigger: 'external', requestedAt: now * 1000 },
  'requestedAt with a fraction': { tenantId: 'acme', mode: 'full', trigger: 'external', requestedAt: now + 0.5 },
  'requestedAt as a string': { tenantId: 'acme', mode: 'full', trigger: 'external', requestedAt: String(now) },
  'no requestedAt': { tenantId: 'acme', mode: 'full', trigger: 'external' },
  'a bad tenant id': { tenantId: 'Acme Corp', mode: 'full', trigger: 'external', requestedAt: now },
  'mode backfill': { tenantId: 'acme', mode: 'backfill', trigger: 'external', requestedAt: now },
  'a date that is no date': { tenantId: 'acme', mode: 'full', since: '2026-02-30', trigger: 'external', requestedAt: now },
  'since as a time': { tenantId: 'acme', mode: 'full', since: '2026-01-01T00:00:00Z', trigger: 'external', requestedAt: now },
  'an unknown field': { tenantId: 'acme', mode: 'full', trigger: 'external', requestedAt: now, priority: 1 },
  'not an object': ['acme', 'full'],
  null: null,
};

describe('jobs contract', () => {
  it('--json prints the sync queue, its BullMQ prefix, name, schema, deduplication and options for KEY_PREFIX, without Redis', async () => {
    const r = await runContract(['--json'], { ...NO_REDIS, KEY_PREFIX: '{acme-prod}' });
    expect(r.code, r.stderr).toBe(0);
    const contract = JSON.parse(r.stdout) as JobContract;
    expect(contract.keyPrefix).toBe('{acme-prod}');
    const sync = contract.queues.find((q) => q.queue === 'sync');
    expect(sync?.prefix).toBe('acme-prod:{sync}');
    const job = sync?.jobs.find((j) => j.name === 'sync-run');
    expect(job).toBeDefined();
    expect(job!.deduplication).toMatchObject({ id: 'sync.<tenantId>.<mode>.<since, or "all" when absent>', keepLastIfActive: true, exampleId: 'sync.acme.full.2026-01-01' });
    expect(job!.options).toEqual({
      attempts: 8,
      backoff: { type: 'exponential', delay: 2_000 },
      removeOnComplete: { count: 500, age: 604_800 },
      removeOnFail: { count: 2_000, age: 2_592_000 },
      deduplication: { id: 'sync.acme.full.2026-01-01', keepLastIfActive: true },
    });
    expect(job!.withoutOptions).toEqual({ attempts: 1, removeOnComplete: { count: 500, age: 604_800 }, removeOnFail: { count: 2_000, age: 2_592_000 } });
    expect(JOBS.sync.schema.safeParse(job!.example).success).toBe(true);
    // Only the jobs marked for outside code are printed: the calls and the token protocol are not.
    expect(contract.queues.map((q) => q.queue)).toEqual(['sync']);
  });

  it('its JSON Schema accepts and refuses what the worker accepts and refuses', async () => {
    const r = await runContract(['--json'], NO_REDIS);
    expect(r.code, r.stderr).toBe(0);
    const contract = JSON.parse(r.stdout) as JobContract;
    const printed = contract.queues[0]!.jobs[0]!.dataSchema;
    expect(printed).toMatchObject({ type: 'object', additionalProperties: false, required: ['tenantId', 'mode', 'trigger', 'requestedAt'] });
    const fromPrinted = z.fromJSONSchema(printed);
    for (const data of valid) {
      expect(JOBS.sync.schema.safeParse(data).success, JSON.stringify(data)).toBe(true);
      expect(fromPrinted.safeParse(data).success, `printed schema on ${JSON.stringify(data)}`).toBe(true);
    }
    for (const [what, data] of Object.entries(invalid)) {
      expect(JOBS.sync.schema.safeParse(data).success, `worker on ${what}`).toBe(false);
      expect(fromPrinted.safeParse(data).success, `printed schema on ${what}`).toBe(false);
    }
  });

  it('prints the same for people, and follows KEY_PREFIX', async () => {
    const r = await runContract([], { ...NO_REDIS, KEY_PREFIX: '{cs}' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('queue sync, BullMQ prefix "cs:{sync}"');
    expect(r.stdout).toContain('job name   sync-run');
    expect(r.stdout).toMatch(/trigger +required, one of .*"external"/);
    expect(r.stdout).toMatch(/requestedAt +required, integer >= 946684800000 and <= 4102444800000/);
    expect(r.stdout).toContain('deduplication id sync.<tenantId>.<mode>.<since, or "all" when absent>, keepLastIfActive true');
    expect(r.stdout).toContain('without options: no retries, and the worker keeps completed jobs the newest 500, for 7 days, failed ones the newest 2000, for 30 days');
  });
});
