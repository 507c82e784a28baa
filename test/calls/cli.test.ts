/**
 * `collections-sync calls ...` as a child process against a rig (Redis, simulator, worker): bad inputs are
 * refused with clear messages before any call request; a dry run, a waited campaign, list/report, release.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { AS_OF, callRequests, CONTACTS, INVOICES, NUMBERS } from './fixtures.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const BULK = 'POST /ai/phone-calls/action/call-bulk';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('calls on the command line', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dir: string;
  let env: Record<string, string>;
  const cli = (args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'calls', ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  /** Exit 2 with each of these in its message. */
  const refused = (r: Run, ...parts: string[]): void => {
    expect(r.code, r.stderr).toBe(2);
    for (const part of parts) expect(r.stderr).toContain(part);
  };
  /** No call request reached the service and no campaign job was queued. */
  const nothingQueued = async (): Promise<void> => {
    expect(callRequests(rig.sim)).toBe(0);
    expect(await rig.app.queues.calls.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0 });
  };
  const uuidOf = (id: string) => rig.sim.data('client-acme').contacts.find((c) => c.extPlatformId === id)!.uuid;
  const overdue = ['--tenant', 'acme', '--overdue-days', '30', '--min-amount', '100', '--as-of', AS_OF];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-calls-cli-'));
    const tenants = [{ id: 'acme', platform: { kind: 'memory', name: 'acme-cli' }, extra: { calls: { defaultRegion: 'SA', requestSize: 50 } } }];
    await writeFile(join(dir, 'tenants.json'), tenantsJson(tenants));
    rig = await startRig({ redisUrl: redis.url, tenants, logLevel: 'warn' });
    rig.memory.get('acme-cli').upsertMany('contacts', CONTACTS);
    rig.memory.get('acme-cli').upsertMany('invoices', INVOICES);
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    await rig.app.clientFor(rig.app.tenant('acme')!).updateContact({ uuid: uuidOf('C-06'), remindersEnabled: false });
    env = rig.cliEnv(join(dir, 'tenants.json'));
  });
  afterAll(async () => {
    await rig?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses bad templates, settings, tenants, list rows and numbers before any call request', async () => {
    await writeFile(join(dir, 'bad.csv'), 'number,name\n0501234567,Good\n12345,Too Short\n0501234567,Again\n');
    const [template, tenant, list, one, cancel] = await Promise.all([
      cli(['campaign', ...overdue, '--template', 'not-a-uuid', '--batch-size', '5']),
      cli(['campaign', '--tenant', 'nope', '--overdue-days', '30']),
      cli(['campaign', '--tenant', 'acme', '--list', join(dir, 'bad.csv')]),
      cli(['one', '--tenant', 'acme', '--contact-uuid', uuidOf('C-03')]),
      cli(['cancel', '--campaign', 'cmp-nothing-here']),
    ]);
    expect(template.code).toBe(2);
    expect(template.stderr).toContain('--template must be the UUID of an AI settings template (got "not-a-uuid")');
    expect(template.stderr).toContain('--batch-size must be a whole number from 10 to 1000 (got "5")');
    expect(tenant.code).toBe(2);
    expect(tenant.stderr).toContain('unknown tenant "nope"');
    refused(list, '2 bad row(s); nothing was queued', 'line 3: not a valid number for SA ("12345")', 'line 4: the same number as line 2');
    expect(one.code).toBe(2);
    expect(one.stderr).toContain('(Short Number Co) has no usable number: not a valid number');
    expect(cancel.code).toBe(2);
    await nothingQueued();
  });

  it('queues nothing from a list with only bad rows, even with --skip-bad-rows, and refuses an unknown delimiter', async () => {
    // Tab-separated with CR line endings: the delimiter is read from the header and lines are counted exactly.
    await writeFile(join(dir, 'all-bad.tsv'), 'number\tname\r12345\tToo Short\r"0501234567"x\tGarbage\r');
    const [allBad, delimiter] = await Promise.all([
      cli(['campaign', '--tenant', 'acme', '--list', join(dir, 'all-bad.tsv'), '--skip-bad-rows', '--wait']),
      cli(['campaign', '--tenant', 'acme', '--list', join(dir, 'all-bad.tsv'), '--delimiter', ':']),
    ]);
    refused(allBad, '2 bad row(s); nothing was queued:', 'line 2: not a valid number for SA ("12345")', 'line 3: text after the closing quote of a cell');
    refused(delimiter, '--delimiter must be one of , ; | tab (got ":")');
    await nothingQueued();
  });

  it('asks for --yes before a campaign places calls: without it nothing is sent and it says how many (issue 12)', async () => {
    await writeFile(join(dir, 'two.csv'), 'number,name\n0545000002,One\n0545000003,Two\n');
    const [fromList, fromOverdue] = await Promise.all([cli(['campaign', '--tenant', 'acme', '--list', join(dir, 'two.csv'), '--wait']), cli(['campaign', ...overdue])]);
    refused(fromList, `this campaign calls 2 numbers of the list ${join(dir, 'two.csv')} for acme. Nothing was queued: add --yes to place the calls`);
    refused(fromOverdue, 'this campaign calls up to 3 numbers (customers with invoices 30+ days overdue, at least 100 outstanding;', 'add --yes');
    await nothingQueued();
  });

  it('previews, runs, lists and reports a campaign; unknown outcomes exit 3 and can be released', async () => {
    const dry = await cli(['campaign', ...overdue, '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    const preview = JSON.parse(dry.stdout) as { campaign: { status: string }; counts: Record<string, number> };
    expect(preview.campaign.status).toBe('previewed');
    expect(preview.counts).toMatchObject({ planned: 2, skipped: 6 });
    expect(callRequests(rig.sim)).toBe(0);

    const real = await cli(['campaign', ...overdue, '--yes', '--wait']);
    expect(real.code).toBe(0);
    expect(real.stdout).toMatch(/campaign cmp-\S+ of acme, invoices 30\+ days overdue, at least 100 outstanding as of 2026-11-20: done/);
    expect(real.stdout).toContain('called 2, unknown outcome 0');
    expect(real.stdout).toContain('C-03 (Short Number Co): invalid-phone');
    expect(rig.sim.data('client-acme').calls.map((c) => c.numberToCall).sort()).toEqual([NUMBERS.noor, NUMBERS.gulf].sort());

    await writeFile(join(dir, 'drop.json'), JSON.stringify([{ number: '0545000001', name: 'Dropped' }]));
    rig.sim.setFaults({ script: [{ route: BULK, fault: 'drop', count: 1 }] });
    const dropped = await cli(['campaign', '--tenant', 'acme', '--list', join(dir, 'drop.json'), '--yes', '--wait']);
    expect(dropped.code).toBe(3);
    expect(dropped.stdout).toContain('UNKNOWN OUTCOME');
    const id = /campaign (cmp-\S+) of acme/.exec(dropped.stdout)?.[1];
    expect(id).toBeDefined();

    const unknown = await cli(['list', '--unknown']);
    expect(unknown.stdout).toContain(`acme  ${id!}  +966545000001  Dropped`);
    const release = await cli(['release', '--tenant', 'acme', '--campaign', id!, '--number', '0545000001']);
    expect(release.code).toBe(0);
    expect(release.stdout).toContain('released 1 call(s)');
    const [listed, report, cancelled] = await Promise.all([cli(['list', '--tenant', 'acme']), cli(['report', '--campaign', id!, '--json']), cli(['cancel', '--campaign', id!, '--json'])]);
    expect(listed.stdout).toContain(`${id!}  list  done`);
    expect((JSON.parse(report.stdout) as { counts: Record<string, number> }).counts).toMatchObject({ released: 1, unknown: 0 });
    expect(rig.sim.counters().requests[BULK]).toEqual({ '201': 1, drop: 1 });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toEqual({ campaignId: id, cancelled: true });
    // Eleven CLI processes one after another: on a loaded 2-core machine each start costs seconds.
  }, 180_000);
});
