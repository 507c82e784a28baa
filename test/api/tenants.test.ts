/**
 * Tenants as data over the control API, end to end over real HTTP against the worker's public server and a real
 * Redis: create, read (ETag), patch (JSON merge patch, If-Match), the list page by page, a run of a created tenant,
 * delete; a tenant of the file is read-only; `${VAR}` is refused; secrets never come back and are sealed in Redis;
 * a key limited to some tenants cannot create or delete. Every answer is checked against the generated document.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/index.js';
import { prefixPattern } from '../../src/redis/keys.js';
import { ApiClient } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const FULL = 'full-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const ACME_ONLY = 'acme-key-Pn5Dx8Qw2Ha7Rk4VmLz9Tc3Jb6Fs';
const ZETA_SECRET = 'zeta-client-secret-Hq7Wm2Kx9';
const HOOK_SECRET = 'zeta-call-hook-secret-Lp4Vn8Rt';
const T = '2026-11-02T08:15:00Z';

type Problem = { type: string; status: number; detail: string; errors?: { in: string; path: (string | number)[]; message: string }[] };
type View = { id: string; source: string; platform: string; settings: Record<string, unknown>; secretsSet: string[] };
type List = { items: View[]; next: string | null };

describe('tenants over the control API', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let api: ApiClient;
  let root: string;
  let zetaFolder: string;

  const entry = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    collections: { clientId: `client-${id}`, clientSecret: ZETA_SECRET },
    platform: { kind: 'file', path: zetaFolder },
    calls: { webhookSecret: HOOK_SECRET },
    ...extra,
  });
  const merge = { 'content-type': 'application/merge-patch+json' };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'cs-tenants-api-'));
    zetaFolder = join(root, 'zeta');
    await mkdir(zetaFolder);
    await writeFile(join(zetaFolder, 'contacts.ndjson'), ['C1', 'C2'].map((id) => JSON.stringify({ id, updatedAt: T, name: `Company ${id}` })).join('\n') + '\n');
    const port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }],
      simulator: {
        clients: [
          { clientId: 'client-acme', clientSecret: 'secret-acme-x9' },
          { clientId: 'client-zeta', clientSecret: ZETA_SECRET },
        ],
      },
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', PLATFORM_TOKEN_KEY: TOKEN_KEY, FILE_PLATFORM_ROOT: root, API_KEYS: `full:${FULL}\nacme-only:${ACME_ONLY}:acme` },
    });
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await rig?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('creates a tenant: 201 with Location, ETag and its view, secrets named but never answered', async () => {
    const made = await api.call<View>('POST', '/v1/tenants', { key: FULL, body: entry('zeta') });
    expect(made.status).toBe(201);
    expect(made.headers.get('location')).toBe('/v1/tenants/zeta');
    expect(made.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(made.body).toMatchObject({ id: 'zeta', source: 'api', platform: 'file', secretsSet: ['calls.webhookSecret', 'collections.clientSecret'] });
    expect(made.body.settings).toEqual({ id: 'zeta', collections: { clientId: 'client-zeta' }, platform: { kind: 'file', path: zetaFolder }, calls: {} });
    expect(made.text).not.toContain(ZETA_SECRET);
    expect(made.text).not.toContain(HOOK_SECRET);
    expect(rig.app.tenant('zeta')?.collections.clientSecret.reveal()).toBe(ZETA_SECRET);
  });

  it('refuses an id that exists, in the store or in the file (409)', async () => {
    const again = await api.call<Problem>('POST', '/v1/tenants', { key: FULL, body: entry('zeta') });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('tag:collections-sync,2026:problem/tenant-exists');
    const file = await api.call<Problem>('POST', '/v1/tenants', { key: FULL, body: entry('acme') });
    expect(file.status).toBe(409);
    expect(file.body.detail).toContain('tenants file');
  });

  it('refuses ${VAR} references, naming each field (422), and a file folder outside FILE_PLATFORM_ROOT', async () => {
    const body = entry('vars', { collections: { clientId: 'client-vars', clientSecret: '${VARS_SECRET}' }, calls: { webhookSecret: 'x-${HOOK}-0123456789' } });
    const refused = await api.call<Problem>('POST', '/v1/tenants', { key: FULL, body });
    expect(refused.status).toBe(422);
    expect(refused.body.errors?.map((e) => e.path)).toEqual([
      ['collections', 'clientSecret'],
      ['calls', 'webhookSecret'],
    ]);
    expect(refused.body.errors?.[0]?.message).toContain('${VAR}');
    const outside = await api.call<Problem>('POST', '/v1/tenants', { key: FULL, body: entry('away', { collections: { clientId: 'client-away', clientSecret: 's-away' }, platform: { kind: 'file', path: tmpdir() } }) });
    expect(outside.status).toBe(422);
    expect(outside.body.errors?.[0]?.path).toEqual(['platform', 'path']);
    // Addresses the caller names: https, and public (the file may point at this machine; the API may not).
    const inside = await api.call<Problem>('POST', '/v1/tenants', {
      key: FULL,
      body: entry('inside', { collections: { clientId: 'client-inside', clientSecret: 's-inside', baseUrl: 'http://127.0.0.1:9/api-service/v1', authUrl: 'https://10.0.0.5' } }),
    });
    expect(inside.status).toBe(422);
    expect(inside.body.errors?.map((e) => [e.path.join('.'), e.message])).toEqual([
      ['collections.baseUrl', expect.stringContaining('127.0.0.1: the address is not a public one') as unknown],
      ['collections.authUrl', expect.stringContaining('10.0.0.5: the address is not a public one') as unknown],
    ]);
    const patchedInside = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { notify: { url: 'https://[::1]/hook', secret: 'whsec_' + 'A'.repeat(32) } }, headers: merge });
    expect(patchedInside.status).toBe(422);
    expect(patchedInside.body.errors?.[0]?.path).toEqual(['notify', 'url']);
    const patched = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { collections: { clientSecret: '${X}' } }, headers: merge });
    expect(patched.status).toBe(422);
    expect((await api.call<List>('GET', '/v1/tenants', { key: FULL })).body.items.map((t) => t.id)).toEqual(['acme', 'zeta']);
  });

  it('reads a tenant with an ETag and patches it (merge patch), honouring If-Match (412 when stale)', async () => {
    const read = await api.call<View>('GET', '/v1/tenants/zeta', { key: FULL });
    expect(read.status).toBe(200);
    const tag = read.headers.get('etag')!;
    expect(tag).toMatch(/^".+"$/);
    const patched = await api.call<View>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 4, calls: { defaultRegion: 'AE' } }, headers: { ...merge, 'if-match': tag } });
    expect(patched.status).toBe(200);
    expect(patched.body.settings).toMatchObject({ inFlightLimit: 4, calls: { defaultRegion: 'AE' } });
    // The secrets the patch did not name are kept.
    expect(patched.body.secretsSet).toEqual(['calls.webhookSecret', 'collections.clientSecret']);
    const newTag = patched.headers.get('etag');
    expect(newTag).not.toBe(tag);
    expect(rig.app.tenant('zeta')?.inFlightLimit).toBe(4);
    expect(rig.app.tenant('zeta')?.calls.webhookSecret?.reveal()).toBe(HOOK_SECRET);

    const stale = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 8 }, headers: { ...merge, 'if-match': tag } });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe('tag:collections-sync,2026:problem/tenant-changed');
    // null removes a member; an invalid result is refused with its zod issues.
    const removed = await api.call<View>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: null }, headers: { ...merge, 'if-match': newTag! } });
    expect(removed.status).toBe(200);
    expect(removed.body.settings).not.toHaveProperty('inFlightLimit');
    const invalid = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 0 }, headers: merge });
    expect(invalid.status).toBe(422);
    expect(invalid.body.errors?.[0]?.path).toEqual(['inFlightLimit']);
    const renamed = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { id: 'other' }, headers: merge });
    expect(renamed.status).toBe(422);
    const asJson = await api.call<Problem>('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 2 } });
    expect(asJson.status).toBe(415);
  });

  it('keeps a tenant of the file read-only: source file, 409 to a patch or a delete', async () => {
    const acme = await api.call<View>('GET', '/v1/tenants/acme', { key: FULL });
    expect(acme.body).toMatchObject({ id: 'acme', source: 'file', secretsSet: ['collections.clientSecret'] });
    expect(acme.headers.get('etag')).toMatch(/^".+"$/);
    expect(acme.text).not.toContain('secret-acme-x9');
    const patch = await api.call<Problem>('PATCH', '/v1/tenants/acme', { key: FULL, body: { inFlightLimit: 2 }, headers: merge });
    expect(patch.status).toBe(409);
    expect(patch.body.type).toBe('tag:collections-sync,2026:problem/tenant-from-file');
    const del = await api.call<Problem>('DELETE', '/v1/tenants/acme', { key: FULL });
    expect(del.status).toBe(409);
    expect(del.body.detail).toContain('tenants file');
  });

  it('pages the list by id (next null on the last page)', async () => {
    for (const id of ['beta', 'gamma']) {
      const made = await api.call('POST', '/v1/tenants', { key: FULL, body: entry(id, { collections: { clientId: `client-${id}`, clientSecret: `s-${id}-0000` }, platform: { kind: 'memory', name: id }, calls: {} }) });
      expect(made.status).toBe(201);
    }
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { body: List } = await api.call<List>('GET', `/v1/tenants?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`, { key: FULL });
      ids.push(...page.body.items.map((t) => t.id));
      cursor = page.body.next;
      pages += 1;
    } while (cursor !== null);
    expect(ids).toEqual(['acme', 'beta', 'gamma', 'zeta']);
    expect(pages).toBe(2);
    const bad = await api.call<Problem>('GET', '/v1/tenants?cursor=%21%21', { key: FULL });
    expect(bad.status).toBe(400);
  });

  it('runs a created tenant: its records land in the service', async () => {
    const run = await rig.sync('zeta', 'full');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.created']).toBe(2);
  });

  it('keeps no secret of a created tenant in plain text in Redis', async () => {
    const client = new Redis(redis.url);
    try {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await client.scan(cursor, 'MATCH', prefixPattern(rig.env.KEY_PREFIX), 'COUNT', 1000);
        keys.push(...batch);
        cursor = next;
      } while (cursor !== '0');
      expect(keys).toContain(`${rig.env.KEY_PREFIX.replace(/[{}]/g, '')}:tenant:{zeta}`);
      for (const key of keys) {
        const dump = await client.dumpBuffer(key);
        const text = dump?.toString('latin1') ?? '';
        expect(text, key).not.toContain(ZETA_SECRET);
        expect(text, key).not.toContain(HOOK_SECRET);
        expect(text, key).not.toContain('s-beta-0000');
      }
    } finally {
      client.disconnect();
    }
  });

  it('refuses a key limited to some tenants to create or delete (403), and hides the others from it (404)', async () => {
    const create = await api.call<Problem>('POST', '/v1/tenants', { key: ACME_ONLY, body: entry('delta', { collections: { clientId: 'client-delta', clientSecret: 's-delta' } }) });
    expect(create.status).toBe(403);
    expect(create.body.type).toBe('tag:collections-sync,2026:problem/key-limited');
    expect((await api.call<Problem>('DELETE', '/v1/tenants/acme', { key: ACME_ONLY })).status).toBe(403);
    expect((await api.call<Problem>('DELETE', '/v1/tenants/zeta', { key: ACME_ONLY })).status).toBe(404);
    expect((await api.call<List>('GET', '/v1/tenants', { key: ACME_ONLY })).body.items.map((t) => t.id)).toEqual(['acme']);
    expect(rig.app.tenant('zeta')).toBeDefined();
  });

  it('deletes a created tenant: gone from the API and the lookup, no new run, its state kept', async () => {
    const del = await api.call('DELETE', '/v1/tenants/zeta', { key: FULL });
    expect(del.status).toBe(204);
    expect((await api.call<Problem>('GET', '/v1/tenants/zeta', { key: FULL })).status).toBe(404);
    expect((await api.call<Problem>('POST', '/v1/tenants/zeta/runs', { key: FULL, body: { mode: 'incremental' } })).status).toBe(404);
    expect(rig.app.tenant('zeta')).toBeUndefined();
    expect((await rig.app.stores.runs.recent('zeta', 5)).length).toBe(1);
    expect((await api.call<Problem>('DELETE', '/v1/tenants/zeta', { key: FULL })).status).toBe(404);
  });

  it('deletes with purge=true: the state goes too, and the tenant created again starts afresh', async () => {
    expect((await api.call('POST', '/v1/tenants', { key: FULL, body: entry('zeta') })).status).toBe(201);
    // Created again: the state kept from before is its own again.
    expect((await rig.app.stores.runs.recent('zeta', 5)).length).toBe(1);
    const del = await api.call('DELETE', '/v1/tenants/zeta?purge=true', { key: FULL });
    expect(del.status).toBe(204);
    expect(await rig.app.stores.runs.recent('zeta', 5)).toEqual([]);
    expect(await rig.app.stores.cursors.get('zeta', 'contacts')).toBeUndefined();
    expect((await api.call<Problem>('DELETE', '/v1/tenants/acme?purge=maybe', { key: FULL })).status).toBe(400);
  });
});
