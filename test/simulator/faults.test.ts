import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, token, tokenAnswer, until } from './helpers.js';

describe('simulator: faults and load knobs', () => {
  let sim: Simulator;
  let tok: string;
  let clientId = '';
  let n = 0;

  beforeAll(async () => {
    sim = await startSimulator({ clients: [] });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(async () => {
    sim.setFaults(DEFAULT_FAULTS);
    n += 1;
    clientId = `f${n}`;
    sim.setClient(clientId, 'secret');
    tok = await token(sim, clientId, 'secret');
    sim.resetCounters();
  });
  const createContact = (name: string) => api(sim, 'POST', '/contact', { token: tok, body: { name } });
  const names = () => sim.data(clientId).contacts.map((c) => c.name);

  it('script: each matching request consumes the first entry with count left, in order; then normal service', async () => {
    sim.setFaults({
      script: [
        { route: 'POST /contact', fault: '500', count: 1 },
        { fault: '503', count: 1 },
        { route: 'GET /contact', fault: '429', count: 1, retryAfterS: 7 },
      ],
    });
    const r1 = await createContact('one');
    expect(r1.status).toBe(500);
    expect(r1.body).toEqual({ detail: 'Internal error (simulated)' });
    expect((await api(sim, 'GET', '/contact', { token: tok })).status).toBe(503);
    const r3 = await api(sim, 'GET', '/contact', { token: tok });
    expect(r3.status).toBe(429);
    expect(r3.headers['retry-after']).toBe('7');
    expect(r3.body).toEqual({ detail: 'Rate limit exceeded' });
    expect((await createContact('two')).status).toBe(200);
    expect(names()).toEqual(['two']);
    const c = sim.counters();
    expect(c.faultsInjected).toEqual({ '500': 1, '503': 1, '429': 1 });
    expect(c.requests['POST /contact']).toEqual({ '500': 1, '200': 1 });
    expect(c.requests['GET /contact']).toEqual({ '503': 1, '429': 1 });
    expect(c.writesCommitted).toBe(1);
  });

  it('reset: the connection is destroyed before processing, nothing is committed', async () => {
    sim.setFaults({ script: [{ route: 'POST /contact', fault: 'reset', count: 1 }] });
    await expect(createContact('lost')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(names()).toEqual([]);
    expect((await createContact('kept')).status).toBe(200);
    expect(names()).toEqual(['kept']);
    const c = sim.counters();
    expect(c.requests['POST /contact']).toEqual({ reset: 1, '200': 1 });
    expect(c.faultsInjected).toEqual({ reset: 1 });
    expect(c.writesCommitted).toBe(1);
  });

  it('422: refused before processing with a FastAPI-shaped detail, nothing is committed', async () => {
    sim.setFaults({ script: [{ route: 'POST /contact', fault: '422', count: 1, matching: '"name":"refused"' }] });
    const r = await createContact('refused');
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ detail: [{ loc: ['body'], msg: 'Rejected (simulated)', type: 'value_error' }] });
    expect(names()).toEqual([]);
    expect((await createContact('refused')).status).toBe(200);
    expect(names()).toEqual(['refused']);
    expect(sim.counters().faultsInjected).toEqual({ '422': 1 });
    expect(sim.counters().writesCommitted).toBe(1);
  });

  it('drop: the write is committed though the client only sees a socket error', async () => {
    sim.setFaults({ script: [{ route: 'POST /contact', fault: 'drop', count: 1 }] });
    await expect(createContact('committed')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(names()).toEqual(['committed']);
    const c = sim.counters();
    expect(c.requests['POST /contact']).toEqual({ drop: 1 });
    expect(c.faultsInjected).toEqual({ drop: 1 });
    expect(c.writesCommitted).toBe(1);
  });

  it('drop on the token endpoint: the unseen token still supersedes the one the client holds', async () => {
    sim.setFaults({ script: [{ route: 'POST /auth/v1/api-key/auth', fault: 'drop', count: 1 }] });
    await expect(tokenAnswer(sim, clientId, 'secret')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    const res = await api(sim, 'GET', '/contact', { token: tok });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ reason: 'superseded' });
    expect(sim.counters().tokensIssued[clientId]).toBe(1);
  });

  it('random rates: 5xx, 429 with Retry-After, reset and drop at rate 1', async () => {
    sim.setFaults({ error5xxRate: 1 });
    for (let i = 0; i < 6; i++) expect([500, 503]).toContain((await createContact('x')).status);
    sim.setFaults({ error5xxRate: 0, rate429: 1, retryAfterS: 3 });
    const limited = await createContact('x');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('3');
    sim.setFaults({ rate429: 0, resetRate: 1 });
    await expect(createContact('x')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(names()).toEqual([]);
    sim.setFaults({ resetRate: 0, dropAfterCommitRate: 1 });
    await expect(createContact('dropped')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(names()).toEqual(['dropped']);
    sim.setFaults({ dropAfterCommitRate: 0 });
    expect((await createContact('fine')).status).toBe(200);
    const f = sim.counters().faultsInjected;
    expect((f['500'] ?? 0) + (f['503'] ?? 0)).toBe(6);
    expect(f).toMatchObject({ '429': 1, reset: 1, drop: 1 });
  });

  it('the script is applied before the random rates and does not touch unmatched routes', async () => {
    sim.setFaults({ error5xxRate: 1, script: [{ route: 'POST /contact', fault: '429', count: 1 }] });
    expect((await createContact('a')).status).toBe(429);
    sim.setFaults({ error5xxRate: 0 });
    expect((await api(sim, 'GET', '/contact', { token: tok })).status).toBe(200);
    expect((await createContact('b')).status).toBe(200);
  });

  it('per-client rate limit: excess gets 429 with Retry-After; other clients have their own bucket', async () => {
    sim.setClient('other', 'secret');
    const otherTok = await token(sim, 'other', 'secret');
    sim.setFaults({ rateLimitPerSecond: 1 });
    const answers = await Promise.all(Array.from({ length: 8 }, () => api(sim, 'GET', '/contact', { token: tok })));
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(Number(limited[0]!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(1);
    expect((await api(sim, 'GET', '/contact', { token: otherTok })).status).toBe(200);
    expect(sim.counters().faultsInjected['rate-limit']).toBe(limited.length);
  });

  it('latency holds requests in flight: concurrent requests overlap and are counted per client', async () => {
    sim.setFaults({ latencyMs: 600, jitterMs: 50 });
    const all = Promise.all(Array.from({ length: 4 }, (_, i) => createContact(`slow ${i}`)));
    await until(() => sim.counters().maxConcurrency >= 4, 'four requests in flight');
    expect(sim.inFlight()).toEqual({ 'POST /contact': 4 });
    expect((await all).map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(sim.inFlight()).toEqual({});
    const c = sim.counters();
    expect(c.maxConcurrency).toBe(4);
    expect(c.maxConcurrencyByClient[clientId]).toBe(4);
    expect(c.maxConcurrencyByRoute).toEqual({ 'POST /contact': 4 });
    expect(names()).toHaveLength(4);
  });

  it('counts request-milliseconds in flight per client: n requests held t ms add at least n * t, at most n * the wall time', async () => {
    sim.setFaults({ latencyMs: 150, jitterMs: 0 });
    const before = sim.counters().inFlightMsByClient[clientId] ?? 0;
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: 3 }, (_, i) => createContact(`held ${i}`)));
    const wallMs = performance.now() - t0;
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const added = (sim.counters().inFlightMsByClient[clientId] ?? 0) - before;
    expect(added).toBeGreaterThanOrEqual(3 * 150 - 3); // timers may fire a millisecond early
    expect(added).toBeLessThanOrEqual(3 * wallMs);
    // Nothing in flight: a later reading adds nothing.
    expect(sim.counters().inFlightMsByClient[clientId]).toBe(before + added);
  });
});
