/**
 * FILE_PLATFORM_ROOT through the worker (issue 36, finding 8c): a tenants file naming a folder outside it does not
 * load (the app is not made), and a run whose file was linked out of the root after the load fails saying so, having
 * read nothing of it; a folder under the root syncs as before.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const T = '2026-11-02T08:15:00Z';

describe('FILE_PLATFORM_ROOT in the worker', () => {
  const redis = useTestRedis();
  let base: string;
  let root: string;
  let rig: Rig | undefined;

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'cs-file-root-'));
    root = join(base, 'root');
    await mkdir(join(root, 'acme'), { recursive: true });
    await mkdir(join(root, 'linked'), { recursive: true });
    await mkdir(join(base, 'outside'));
    await writeFile(join(root, 'acme', 'contacts.ndjson'), `${JSON.stringify({ id: 'C1', updatedAt: T, name: 'Inside Co' })}\n`);
    await writeFile(join(base, 'outside', 'contacts.ndjson'), `${JSON.stringify({ id: 'X1', updatedAt: T, name: 'Outside Co' })}\n`);
  });
  afterAll(async () => {
    await rig?.close();
    await rm(base, { recursive: true, force: true });
  });

  it('does not start with a folder outside the root, naming tenant and field', async () => {
    // A simulator of the test's own: the rig's would be left running by a start that throws.
    const sim = await startSimulator({ clients: [] });
    try {
      const start = startRig({ redisUrl: redis.url, sim, tenants: [{ id: 'etc', platform: { kind: 'file', path: join(root, '..', 'outside') } }], env: { FILE_PLATFORM_ROOT: root }, worker: false });
      await expect(start).rejects.toThrow(/tenants\[0\] \(etc\)\.platform\.path: .* is outside FILE_PLATFORM_ROOT/);
    } finally {
      await sim.close();
    }
  });

  it('syncs a folder under the root, and fails a run whose file a link takes out of it, reading none of it', async () => {
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'file', path: join(root, 'acme') } },
        { id: 'linked', platform: { kind: 'file', path: join(root, 'linked') } },
      ],
      env: { FILE_PLATFORM_ROOT: root },
    });
    expect((await rig.sync('acme', 'full')).outcome).toBe('succeeded');
    expect(rig.sim.data('client-acme').contacts.map((c) => c.extPlatformId)).toEqual(['C1']);
    // Linked after the load: the tenants file was fine, the file is not.
    await symlink(join(base, 'outside', 'contacts.ndjson'), join(root, 'linked', 'contacts.ndjson'));
    const run = await rig.sync('linked', 'full');
    expect(run.outcome).toBe('failed');
    expect(run.errors.join(' ')).toMatch(/contacts\.ndjson is outside FILE_PLATFORM_ROOT/);
    expect(rig.sim.data('client-linked').contacts).toEqual([]);
  });
});
