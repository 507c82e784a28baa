/**
 * `collections-sync tenants list|show|add|remove|import` as a child process against a real Redis: the store the API
 * writes, `${VAR}` read from the CLI's environment and stored as values (sealed), import idempotent, a file tenant
 * read-only, status showing a stored tenant, and a worker picking the change up without a restart.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const SECRET = 'cli-stored-secret-Jm4Wq8Zr2';

function cli(args: string[], env: Record<string, string>, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

describe('collections-sync tenants', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dir: string;
  let env: Record<string, string>;
  const entry = (id: string, secret = '${STORED_SECRET}') => ({ id, collections: { clientId: `client-${id}`, clientSecret: secret }, platform: { kind: 'memory', name: id } });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-cli-tenants-'));
    const tenants = [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }];
    await writeFile(join(dir, 'tenants.json'), tenantsJson(tenants));
    rig = await startRig({ redisUrl: redis.url, tenants, env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, TENANT_STORE_POLL_MS: '200' } });
    env = { ...rig.cliEnv(join(dir, 'tenants.json')), PLATFORM_TOKEN_KEY: TOKEN_KEY, STORED_SECRET: SECRET };
  });
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('adds a tenant from stdin (${VAR} from this environment), lists and shows it, never its secret; the worker knows it', async () => {
    const added = await cli(['tenants', 'add', '-'], env, JSON.stringify(entry('zeta')));
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^added zeta \(memory\)/);
    const listed = await cli(['tenants', 'list', '--json'], env);
    expect(JSON.parse(listed.stdout)).toEqual({
      tenants: [
        { id: 'acme', source: 'file', platform: 'memory', schedule: 'every 900 s' },
        { id: 'zeta', source: 'api', platform: 'memory', schedule: 'every 900 s' },
      ],
    });
    const shown = await cli(['tenants', 'show', 'zeta', '--json'], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: 'zeta', source: 'api', secretsSet: ['collections.clientSecret'], settings: { collections: { clientId: 'client-zeta' } } });
    for (const r of [added, listed, shown]) expect(r.stdout + r.stderr).not.toContain(SECRET);
    const status = await cli(['status', '--tenant', 'zeta', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).not.toContain(SECRET);
    // The worker took it from the store, with the value of ${STORED_SECRET} as the CLI read it.
    for (let i = 0; i < 100 && rig.app.tenant('zeta') === undefined; i += 1) await new Promise((r) => setTimeout(r, 50));
    expect(rig.app.tenant('zeta')?.collections.clientSecret.reveal()).toBe(SECRET);
  });

  it('refuses what it cannot store, naming why, and a file tenant for add or remove', async () => {
    const again = await cli(['tenants', 'add', '-'], env, JSON.stringify(entry('zeta')));
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a tenant zeta is stored already');
    const file = await cli(['tenants', 'add', '-'], env, JSON.stringify(entry('acme')));
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('acme is a tenant of the tenants file');
    const bad = await cli(['tenants', 'add', '-'], env, JSON.stringify({ ...entry('bad'), inFlightLimit: 0 }));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/stdin is invalid:\n {2}- tenants\[0\] \(bad\)\.inFlightLimit: /);
    const noKey = await cli(['tenants', 'add', '-'], { ...env, PLATFORM_TOKEN_KEY: '' }, JSON.stringify(entry('nokey')));
    expect(noKey.code).toBe(2);
    const removeFile = await cli(['tenants', 'remove', 'acme', '--yes'], env);
    expect(removeFile.code).toBe(2);
    expect(removeFile.stderr).toContain('acme is a tenant of the tenants file: remove it there');
  });

  it('imports a tenants file idempotently, and removes a stored tenant only with --yes', async () => {
    const file = join(dir, 'move.json');
    await writeFile(file, JSON.stringify({ tenants: [entry('acme'), entry('omar'), entry('zeta')] }));
    const first = await cli(['tenants', 'import', file, '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      tenants: [
        { id: 'acme', outcome: 'created' },
        { id: 'omar', outcome: 'created' },
        { id: 'zeta', outcome: 'unchanged' },
      ],
      stillInFile: ['acme'],
    });
    const second = await cli(['tenants', 'import', file, '--json'], env);
    expect((JSON.parse(second.stdout) as { tenants: { outcome: string }[] }).tenants.map((t) => t.outcome)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    // A changed secret is a change.
    const changed = await cli(['tenants', 'import', file], { ...env, STORED_SECRET: `${SECRET}-2` });
    expect(changed.stdout).toContain('0 new, 3 changed, 0 unchanged');
    expect(changed.stdout).toContain('still in the tenants file (its entry is used while it is): acme');

    const unsure = await cli(['tenants', 'remove', 'omar'], env);
    expect(unsure.code).toBe(2);
    expect(unsure.stderr).toContain('nothing was done: add --yes to do it');
    const removed = await cli(['tenants', 'remove', 'omar', '--yes'], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect((JSON.parse((await cli(['tenants', 'list', '--json'], env)).stdout) as { tenants: { id: string }[] }).tenants.map((t) => t.id)).toEqual(['acme', 'zeta']);
  });
});
