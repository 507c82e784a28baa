/**
 * Event ids and the back-off, without Redis: a run's event id is its (tenant, run)'s whatever the record says, a
 * connection change's is its (tenant, state, time)'s; the default back-off spans about a day in 12 attempts.
 */
import { describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { Secret } from '../../src/secret.js';
import { connectionChangedEvent, notifyBackoffOf, notifyBackoffStrategy, notifyEventSchema, runFinishedEvent, signedHeaders, bodyOf } from '../../src/notify/index.js';
import { ceilingMs } from '../../src/retry.js';
import { Webhook } from 'standardwebhooks';
import { newSecret } from './receiver.js';

const run = { tenantId: 'acme', runId: 'run-7', mode: 'incremental' as const, trigger: 'schedule', outcome: 'partial' as const, counts: { created: 2, deadLettered: 1 }, errors: [], startedAt: Date.UTC(2026, 10, 27, 9), finishedAt: Date.UTC(2026, 10, 27, 9, 1) };

describe('run-webhook events', () => {
  it("a run's event id depends on its tenant and run only: finished twice (other times, counts) is one id", () => {
    const a = runFinishedEvent(run);
    const b = runFinishedEvent({ ...run, finishedAt: run.finishedAt + 5_000, counts: { created: 3 }, outcome: 'succeeded' });
    expect(a.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(b.id).toBe(a.id);
    expect(runFinishedEvent({ ...run, runId: 'run-8' }).id).not.toBe(a.id);
    expect(runFinishedEvent({ ...run, tenantId: 'globex' }).id).not.toBe(a.id);
    expect(a.data).toMatchObject({ deadLettered: 1, startedAt: '2026-11-27T09:00:00.000Z', finishedAt: '2026-11-27T09:01:00.000Z' });
    expect(notifyEventSchema.parse(a)).toEqual(a);
  });

  it('keeps at most five errors of at most 500 characters', () => {
    const e = runFinishedEvent({ ...run, errors: Array.from({ length: 9 }, (_, i) => `${i}`.repeat(900)) });
    expect(e.type === 'run.finished' && e.data.errors).toHaveLength(5);
    expect(e.type === 'run.finished' && e.data.errors[0]!.length).toBe(503);
    expect(notifyEventSchema.safeParse(e).success).toBe(true);
  });

  it('a connection change is one id; two changes (another state or time) are two', () => {
    const c = { tenantId: 'acme', platform: 'xero' as const, state: 'connected' as const, at: 1_790_000_000_000 };
    expect(connectionChangedEvent(c).id).toBe(connectionChangedEvent(c).id);
    expect(connectionChangedEvent({ ...c, at: c.at + 1 }).id).not.toBe(connectionChangedEvent(c).id);
    expect(connectionChangedEvent({ ...c, state: 'revoked' }).id).not.toBe(connectionChangedEvent(c).id);
  });

  it('signs what Standard Webhooks verifies: id.timestamp.body, the timestamp the attempt\'s', () => {
    const secret = newSecret();
    const event = runFinishedEvent(run);
    const body = bodyOf(event);
    const now = new Date();
    const headers = signedHeaders(event, body, new Secret(secret), now);
    expect(headers['webhook-id']).toBe(event.id);
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
    expect(new Webhook(secret).verify(body, headers)).toEqual({ type: 'run.finished', timestamp: event.timestamp, data: event.data });
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow(/No matching signature/);
  });
});

describe('the notify back-off', () => {
  it('defaults to 12 attempts whose last comes 10 to 21 hours after the first', () => {
    const env = loadEnv({});
    expect(env.NOTIFY_ATTEMPTS).toBe(12);
    const policy = notifyBackoffOf(env);
    const ceilings = Array.from({ length: env.NOTIFY_ATTEMPTS - 1 }, (_, i) => ceilingMs(i + 1, policy));
    expect(ceilings.map((ms) => ms / 60_000)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 360, 360]);
    const total = ceilings.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeCloseTo(20.52, 1);
    const strategy = notifyBackoffStrategy(policy);
    for (let n = 1; n < env.NOTIFY_ATTEMPTS; n++) {
      const wait = strategy(n);
      expect(wait).toBeGreaterThanOrEqual(ceilings[n - 1]! / 2);
      expect(wait).toBeLessThanOrEqual(ceilings[n - 1]!);
    }
  });
});
