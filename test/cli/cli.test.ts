import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/tenants.js';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the command line', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-cli-'));
    const data = sampleData({ contacts: 50, seed: 3 });
    await writeNdjson(join(dir, 'contacts.ndjson'), data.contacts);
    await writeNdjson(join(dir, 'invoices.ndjson'), data.invoices);
    const tenants = [{ id: 'acme', platform: { kind: 'file', path: dir } }];
    await writeFile(join(dir, 'tenants.json'), tenantsJson(tenants));
    rig = await startRig({ redisUrl: redis.url, tenants });
    env = rig.cliEnv(join(dir, 'tenants.json'));
  });
  afterAll(async () => {
    await rig?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('shows help and names every command', async () => {
    const r = await cli(['--help'], {});
    expect(r.code).toBe(0);
    for (const c of ['worker', 'sync', 'backfill', 'status', 'dead-letters', 'id-map', 'dry-run', 'simulator']) expect(r.stdout).toContain(c);
  });

  it('id-map rebuild, and its old name mapping rebuild, say what they would do without --yes, do nothing and exit 2 (a confirmation refused)', async () => {
    for (const name of ['id-map', 'mapping']) {
      for (const json of [[], ['--json']]) {
        const r = await cli([name, 'rebuild', '--tenant', 'acme', ...json], env);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toBe("collections-sync: would forget acme's state and queue a full run; nothing was done: add --yes to do it\n");
        expect(r.stdout).toBe('');
      }
    }
  });

  it('gives clear errors for an unknown tenant, a bad date and an unreachable Redis', async () => {
    const unknown = await cli(['sync', '--tenant', 'nobody'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown tenant "nobody"; the tenants file and the store have: acme/);
    const badDate = await cli(['backfill', '--tenant', 'acme', '--since', '2026-13-01'], env);
    expect(badDate.code).toBe(2);
    expect(badDate.stderr).toMatch(/--since must be a date as YYYY-MM-DD/);
    const noRedis = await cli(['status'], { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
    expect(noRedis.code).toBe(1);
    // One clean line: the cause, and no "[ioredis] Unhandled error event" with a stack before it (issue 12).
    expect(noRedis.stderr).toBe('collections-sync: REDIS_URL: cannot reach Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n');
  });

  it('names what is wrong in REDIS_URL and a missing tenants file, with where to look (issue 12)', async () => {
    const http = await cli(['status'], { ...env, REDIS_URL: 'http://x' });
    expect(http.code).toBe(2);
    expect(http.stderr).toContain('REDIS_URL: expected a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379');
    const missing = join(dir, 'no-such-tenants.json');
    const noFile = await cli(['status'], { ...env, TENANTS_FILE: missing });
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toContain(`no tenants file at ${missing}; TENANTS_FILE names it.`);
    expect(noFile.stderr).not.toContain('ENOENT');
    // The example it prints is a valid tenants file, and the README sections it names are there.
    const example = /^ {2}(\{"tenants".*\})$/m.exec(noFile.stderr)?.[1];
    expect(example).toBeDefined();
    expect(parseTenants(example!, { ACME_SECRET: 'x' }).tenants.map((t) => t.id)).toEqual(['acme']);
    const headings = (await readFile(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8')).split('\n').filter((l) => l.startsWith('#')).map((l) => l.replace(/^#+\s*/, ''));
    const named = [...noFile.stderr.matchAll(/"([^"]+)" in the README/g)].map((m) => m[1]);
    expect(named).toEqual(['Tenants file']);
    for (const n of named) expect(headings).toContain(n);
    expect(noFile.stderr).toContain('docs/trying-by-hand.md');
    await readFile(fileURLToPath(new URL('../../docs/trying-by-hand.md', import.meta.url)), 'utf8');
    const unset = await cli(['status'], Object.fromEntries(Object.entries({ ...env, TENANTS_FILE: '' }).filter(([k]) => k !== 'TENANTS_FILE')));
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/no tenants file at \.\/tenants\.json \(in .*\); TENANTS_FILE is not set and defaults to \.\/tenants\.json\./);
  });

  it('runs a sync and waits for it, then reports status, a dry run and dead letters', async () => {
    const sync = await cli(['sync', '--tenant', 'acme', '--wait', '--json'], env);
    expect(sync.code, sync.stderr).toBe(0);
    const run = JSON.parse(sync.stdout) as { outcome: string; counts: Record<string, number> };
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.created']).toBe(50);
    expect(rig.sim.data('client-acme').contacts).toHaveLength(50);

    const status = await cli(['status', '--tenant', 'acme', '--json'], env);
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout) as { tenants: { tenant: string; lastRuns: { outcome: string }[]; auth: { hasToken: boolean } }[] };
    expect(s.tenants[0]?.lastRuns[0]?.outcome).toBe('succeeded');
    expect(s.tenants[0]?.auth.hasToken).toBe(true);
    expect(status.stdout).not.toContain('secret-acme-x9');
    // For people: no raw JSON, and ages as durations, not seconds (issue 28).
    const human = await cli(['status', '--tenant', 'acme'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).not.toMatch(/[{}"]/);
    expect(human.stdout).toMatch(/run \S+ incremental succeeded started \d+ s ago \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\): created \d+/);
    expect(human.stdout).toContain('  dead letters: none\n');

    const before = rig.sim.counters().writesCommitted;
    const dry = await cli(['dry-run', '--tenant', 'acme', '--json'], env);
    expect(dry.code).toBe(0);
    const report = JSON.parse(dry.stdout) as { entity: string; create: number; update: number; skip: number }[];
    expect(report.find((r) => r.entity === 'contacts')).toMatchObject({ create: 0, update: 0, skip: 50 });
    expect(rig.sim.counters().writesCommitted).toBe(before);

    const dl = await cli(['dead-letters', 'list', '--tenant', 'acme'], env);
    expect(dl.code).toBe(0);
    expect(dl.stdout).toMatch(/no dead letters for acme/);
  });

  it('escapes control characters in what people read: an id with ESC[2J cannot clear the screen (issue 17)', async () => {
    await rig.app.stores.deadLetters.add('acme', [
      { entity: 'contacts', platformId: 'C-\u001b[2J\u001b[H', reason: 'bad name "\u009b31mRED\r"\u0007', code: 'E_TEST', detail: { name: '\u001b]0;title\u0007' }, runId: 'r-1', at: Date.parse('2026-11-20T00:00:00Z') },
    ]);
    // eslint-disable-next-line no-control-regex -- looking for raw control characters
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
    const list = await cli(['dead-letters', 'list', '--tenant', 'acme'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).not.toMatch(raw);
    expect(list.stdout).toContain('contacts C-\\x1b[2J\\x1b[H [E_TEST] bad name "\\x9b31mRED\\x0d"\\x07');
    // --json is JSON (C0 as \u001b by JSON.stringify; C1 as \u009b too), and parses back to the same strings.
    const json = await cli(['dead-letters', 'list', '--tenant', 'acme', '--json'], env);
    expect(json.stdout).not.toMatch(raw);
    expect((JSON.parse(json.stdout) as { platformId: string; reason: string }[])[0]).toMatchObject({ platformId: 'C-\u001b[2J\u001b[H', reason: 'bad name "\u009b31mRED\r"\u0007' });
    // An error that quotes what the user gave is escaped too.
    const unknown = await cli(['status', '--tenant', 'x\u001b[2J'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown tenant "x\\x1b[2J"');
    const status = await cli(['status', '--tenant', 'acme'], env);
    expect(status.stdout).toContain('  dead letters: 1 (contacts 1): collections-sync dead-letters list --tenant acme\n');
    await rig.app.stores.deadLetters.clear('acme');
  });

  it('dead-letters retry and id-map rebuild answer in JSON with --json (issue 16)', async () => {
    const retry = await cli(['dead-letters', 'retry', '--tenant', 'acme', '--json'], env);
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(retry.stdout)).toMatchObject({ tenant: 'acme', mode: 'replay', jobId: expect.any(String) as string });
    const rebuild = await cli(['id-map', 'rebuild', '--tenant', 'acme', '--yes', '--json'], env);
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(JSON.parse(rebuild.stdout)).toMatchObject({ tenant: 'acme', done: true, mode: 'full', forgotKeys: expect.any(Number) as number });
  });
});
