/**
 * The Node receiver of docs/run-webhooks.md runs as written (a child process, from a file inside the repository so
 * it finds `standardwebhooks`): a worker's run.finished reaches it and verifies, and a forged request is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { newSecret, until } from './receiver.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the Node receiver of docs/run-webhooks.md', () => {
  const redis = useTestRedis();
  let child: ChildProcess | undefined;
  let rig: Rig | undefined;
  const folder = join(ROOT, '.tmp', `run-webhooks-example-${process.pid}-${Date.now()}`);
  afterAll(async () => {
    child?.kill();
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('verifies a worker\'s run.finished as written, and refuses a forged request', async () => {
    const doc = await readFile(join(ROOT, 'docs/run-webhooks.md'), 'utf8');
    const example = /## A receiver in Node[\s\S]*?```js\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    await mkdir(folder, { recursive: true });
    const file = join(folder, 'receiver.mjs');
    await writeFile(file, example!);
    const secret = newSecret();
    child = spawn(process.execPath, [file], { env: { PATH: process.env['PATH'] ?? '', WEBHOOK_SECRET: secret, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const port = Number((await until(async () => /listening on (\d+)/.exec(stdout)?.[1], (p) => p !== undefined, 10_000).catch(() => {
      throw new Error(`the example did not start: ${stderr}`);
    }))!);
    const url = `http://127.0.0.1:${port}/hooks`;

    const forged = await fetch(url, { method: 'POST', body: '{"type":"run.finished"}', headers: { 'webhook-id': 'msg_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' } });
    expect(forged.status).toBe(400);

    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: `example-${Math.random()}` }, extra: { notify: { url, secret } } }],
      // The example receiver listens on this machine: a tenant's own URL reaches it only when allowed.
      env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' },
    });
    const run = await rig.sync('acme', 'full');
    const line = await until(async () => stdout.split('\n').find((l) => l.includes('run.finished')), (l) => l !== undefined, 20_000);
    expect(JSON.parse(line!)).toMatchObject({ type: 'run.finished', tenantId: 'acme', outcome: run.outcome });
    expect(await until(() => rig!.app.stores.deliveries.last('acme'), (d) => d?.state === 'delivered')).toMatchObject({ statusCode: 204, attempts: 1 });
  });
});
