import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/secret.js';
import { createLogger } from '../../src/logger.js';
import { hideSecrets, startDashboard, type Dashboard } from '../../src/ops/dashboard.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const PASSWORD = 'correct-horse-battery-staple';
const auth = (user: string, password: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

interface QueuesAnswer {
  queues: { name: string; readOnlyMode: boolean; allowRetries: boolean; counts: Record<string, number>; jobs: { id: string; data: unknown }[] }[];
}

describe('the job dashboard', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dashboard: Dashboard;
  let probe: Queue;

  beforeAll(async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }] });
    rig.memory.get('acme').upsert('contacts', { id: 'C1', updatedAt: '2026-11-01T00:00:00.000Z', name: 'Red Sea Foods', nameAr: 'أغذية البحر الأحمر' });
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    // A queue no worker takes, with a secret-looking field (never produced by our code): the dashboard must hide it.
    probe = new Queue('probe', { connection: rig.app.redis, prefix: rig.env.KEY_PREFIX });
    await probe.add('probe', { tenantId: 'acme', nested: { clientSecret: 'should-not-show', apiKey: 'nor-this' } });
    dashboard = await startDashboard({ queues: [...Object.values(rig.app.queues), probe], port: 0, username: 'ops', password: new Secret(PASSWORD) });
  });
  afterAll(async () => {
    await dashboard?.close();
    await probe?.close();
    await rig?.close();
  });

  it('answers /healthz without credentials and nothing else', async () => {
    expect((await fetch(`${dashboard.url}healthz`)).status).toBe(200);
    const anonymous = await fetch(dashboard.url);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect((await fetch(`${dashboard.url}api/queues`, { headers: auth('ops', 'wrong-password-123') })).status).toBe(401);
    expect((await fetch(`${dashboard.url}api/queues`, { headers: auth('admin', PASSWORD) })).status).toBe(401);
  });

  it('shows the queues and their jobs read-only, with secret-like values hidden', async () => {
    const page = await fetch(dashboard.url, { headers: auth('ops', PASSWORD) });
    expect(page.status).toBe(200);
    const html = await page.text();
    const script = /src="(static\/js\/main[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`${dashboard.url}${script}`, { headers: auth('ops', PASSWORD) })).status).toBe(200);

    const res = await fetch(`${dashboard.url}api/queues?activeQueue=sync&status=completed`, { headers: auth('ops', PASSWORD) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as QueuesAnswer;
    expect(body.queues.map((q) => q.name).sort()).toEqual(['calls', 'notify', 'probe', 'refresh-token', 'schedule', 'sync']);
    for (const q of body.queues) {
      expect(q.readOnlyMode, q.name).toBe(true);
      expect(q.allowRetries, q.name).toBe(false);
    }
    const sync = body.queues.find((q) => q.name === 'sync');
    expect(sync?.counts['completed']).toBe(1);
    expect(sync?.jobs[0]?.data).toMatchObject({ tenantId: 'acme', mode: 'incremental' });

    const answer = (await (await fetch(`${dashboard.url}api/queues?activeQueue=probe&status=waiting`, { headers: auth('ops', PASSWORD) })).json()) as QueuesAnswer;
    const shown = JSON.stringify(answer.queues.find((q) => q.name === 'probe')?.jobs[0]?.data);
    expect(shown).toContain('"tenantId":"acme"');
    expect(shown).not.toContain('should-not-show');
    expect(shown).not.toContain('nor-this');
  });

  it('refuses every change, whatever the route', async () => {
    const attempts: [string, string][] = [
      ['PUT', 'api/queues/sync/pause'],
      ['PUT', 'api/queues/pause'],
      ['PUT', 'api/queues/sync/clean/completed'],
      ['DELETE', 'api/queues/sync/empty'],
      ['POST', 'api/queues/probe/add'],
      ['PUT', 'api/queues/probe/promote'],
    ];
    for (const [method, path] of attempts) {
      const res = await fetch(`${dashboard.url}${path}`, { method, headers: { ...auth('ops', PASSWORD), 'content-type': 'application/json' }, body: '{}' });
      expect(res.status, `${method} ${path}`).toBe(405);
    }
    expect(await rig.app.queues.sync.isPaused()).toBe(false);
    expect(await rig.app.queues.sync.getJobCounts('completed')).toEqual({ completed: 1 });
    expect(await probe.getWaitingCount()).toBe(1);
  });

  it('logs failed logins with the address, never the user name or password, and answers 429 to a source past its failures a minute', async () => {
    let log = '';
    const logger = createLogger({ level: 'info', destination: new Writable({ write: (c: Buffer, _e, done) => ((log += c.toString()), done()) }) });
    const guarded = await startDashboard({ queues: [probe], port: 0, username: 'ops', password: new Secret(PASSWORD), logger, failureDelayMs: 10, maxFailuresPerMin: 3 });
    // A password typed into the user field, then wrong passwords for the right user.
    const tries: [string, string][] = [['Typed-Into-The-User-Field-42', ''], ['ops', 'wrong-password-2'], ['ops', 'wrong-password-3']];
    try {
      for (const [user, password] of tries) expect((await fetch(`${guarded.url}api/queues`, { headers: auth(user, password) })).status).toBe(401);
      // Held by address: the right password too (were it let in, the answer would tell a guesser when it guessed right).
      const held = await fetch(`${guarded.url}api/queues`, { headers: auth('ops', PASSWORD) });
      expect(held.status).toBe(429);
      expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(0);
      const lines = log.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const failed = lines.filter((l) => l['msg'] === 'dashboard: login failed');
      expect(failed.map((l) => l['failures'])).toEqual([1, 2, 3]);
      for (const l of failed) expect(Object.keys(l).sort()).toEqual(['failures', 'level', 'msg', 'pid', 'remoteAddress', 'time']);
      for (const l of failed) expect(l).toMatchObject({ level: 40, remoteAddress: '127.0.0.1' });
      expect(log).not.toContain('Typed-Into-The-User-Field');
      expect(log).not.toContain('wrong-password');
      expect(log).not.toContain(PASSWORD);
      // The hold is per dashboard and source: the other dashboard of this test still serves the right password.
      expect((await fetch(`${dashboard.url}api/queues`, { headers: auth('ops', PASSWORD) })).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it('hides values under secret-like keys at any depth', () => {
    expect(hideSecrets({ a: 1, token: 'x', list: [{ Authorization: 'Bearer y', ok: 'z' }], deep: { refresh_token: 'r', password: 'p' } })).toEqual({
      a: 1,
      token: '[hidden]',
      list: [{ Authorization: '[hidden]', ok: 'z' }],
      deep: { refresh_token: '[hidden]', password: '[hidden]' },
    });
  });
});
