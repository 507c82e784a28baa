/**
 * The control API end to end (issue 31), over real HTTP on 127.0.0.1 against the worker's public server (a rig with
 * WEBHOOK_PORT, API_KEYS, PUBLIC_URL and PLATFORM_TOKEN_KEY): every route with and without a key, a key limited to
 * some tenants, validation, idempotency, a run requested over HTTP that lands records, dead letters page by page and
 * their replay, connect links. Every answer is checked against the generated OpenAPI document (test/helpers/openapi.ts).
 */
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/index.js';
import { IdempotencyStore } from '../../src/api/idempotency.js';
import { requestSync } from '../../src/queues/index.js';
import { waitForRun } from '../../src/state/index.js';
import { ApiClient, validateDocument, type Answer } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';
import { Agent } from 'undici';
import { Secret } from '../../src/secret.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { PlatformAuth } from '../../src/platforms/oauth/oauth.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';
import { newSecret, startReceiver, until, type Receiver } from '../notify/receiver.js';

const FULL = 'full-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const BETA_ONLY = 'beta-key-Pn5Dx8Qw2Ha7Rk4VmLz9Tc3Jb6Fs';
const T = '2026-11-02T08:15:00Z';
const contact = (id: string, extra: Record<string, unknown> = {}) => JSON.stringify({ id, updatedAt: T, name: `Company ${id}`, ...extra });
const invoice = (id: string, contactId: string) => JSON.stringify({ id, contactId, updatedAt: T, status: 'AUTHORISED', number: `N-${id}`, date: '2026-10-01', dueDate: '2026-10-31', total: 100 });
const BAD = 5;

type Problem = { type: string; title: string; status: number; detail: string; errors?: { in: string; path: (string | number)[]; message: string }[] };
type Requested = { runId: string; jobId: string; tenantId: string; mode: string; requestedAt: string; deduplicated: boolean; links: { run: string } };
type Run = { runId: string; state: string; outcome: string | null; counts: { total: Record<string, number>; byEntity: Record<string, Record<string, number>> }; deadLetters: { items: { runId: string }[]; more: boolean } };
type Link = { url: string; linkId: string; expiresAt: string; reconnect: boolean; redirectUri: string; tenantId: string };
type Page = { items: { key: string; entity: string; runId: string; replayable: boolean }[]; next: string | null };

describe('the control API', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let api: ApiClient;
  let base: string;
  let publicUrl: string;
  let folder: string;
  let receiver: Receiver;
  const doc = openApiDocument();

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-api-'));
    const rows = [contact('C1'), contact('C2'), ...Array.from({ length: BAD }, (_, i) => JSON.stringify({ id: `BAD${i + 1}`, updatedAt: T }))];
    await writeFile(join(folder, 'contacts.ndjson'), rows.join('\n') + '\n');
    await writeFile(join(folder, 'invoices.ndjson'), [invoice('I1', 'C1'), invoice('I2', 'C2')].join('\n') + '\n');
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    const hookSecret = newSecret();
    receiver = await startReceiver(hookSecret);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'file', path: folder } },
        { id: 'beta', platform: { kind: 'memory', name: 'beta' } },
        { id: 'kiwi', platform: { kind: 'xero', clientId: 'XEROCLIENT', clientSecret: 'xero-secret' } },
      ],
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', PUBLIC_URL: publicUrl, PLATFORM_TOKEN_KEY: TOKEN_KEY, API_KEYS: `full:${FULL}\nbeta-only:${BETA_ONLY}:beta`, RUN_WEBHOOK_URL: receiver.url, RUN_WEBHOOK_SECRET: hookSecret },
    });
    base = publicUrl;
    api = new ApiClient(doc, base);
  });
  afterAll(async () => {
    await rig?.close();
    await receiver?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  /** An answer without the headers that differ between any two answers (the date, each answer's own Request-Id). */
  const shape = (a: Answer) => ({ status: a.status, text: a.text, headers: Object.fromEntries([...a.headers].filter(([k]) => k !== 'date' && k !== 'request-id')) });

  it('serves a valid OpenAPI 3.1 document, the one committed in docs/openapi.json, without a key, its servers this worker\'s PUBLIC_URL', async () => {
    expect(await validateDocument(doc)).toEqual({ valid: true });
    expect(JSON.parse(await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8'))).toEqual(doc);
    const mine = { ...(JSON.parse(JSON.stringify(doc)) as Record<string, unknown>), servers: [{ url: publicUrl, description: 'this worker (PUBLIC_URL)' }] };
    for (const key of [FULL, undefined, 'wrong-key-Zk8Rt3Wq7Xb2Nm5Lv9Hc4Jp6Fs']) {
      const served = await api.call('GET', '/v1/openapi.json', key === undefined ? {} : { key });
      expect(served.status).toBe(200);
      expect(served.body).toEqual(mine);
    }
  });

  it('answers every route without a key, or with a wrong one, with the public server\'s one 401 (a problem)', async () => {
    const one = shape(await api.call('POST', '/webhooks/nowhere', { raw: '{}' }));
    expect(one.status).toBe(401);
    expect(JSON.parse(one.text)).toEqual({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'unauthorized' });
    expect(one.headers['content-type']).toBe('application/problem+json');
    expect(one.headers['connection']).toBe('close');
    // RFC 6750: the scheme, and `invalid_token` once a token was sent (the rest of the answer is the one 401).
    expect(one.headers['www-authenticate']).toBe('Bearer');
    const calls: [string, string, unknown?][] = [
      ['POST', '/v1/openapi.json'],
      ['GET', '/v1/tenants'],
      ['GET', '/v1/tenants/acme'],
      ['POST', '/v1/tenants/acme/runs', { mode: 'full' }],
      ['POST', '/v1/tenants/nobody/runs', { mode: 'full' }],
      ['POST', '/v1/tenants/acme/runs', { mode: 'bad' }],
      ['GET', '/v1/tenants/acme/runs?limit=3'],
      ['GET', '/v1/tenants/acme/runs/run-1'],
      ['GET', '/v1/tenants/acme/dead-letters?limit=2'],
      ['POST', '/v1/tenants/acme/dead-letters/replay'],
      ['POST', '/v1/tenants/kiwi/connect-links', {}],
      ['GET', '/v1/tenants/kiwi/connect-links'],
      ['DELETE', '/v1/tenants/kiwi/connect-links/Xq3b_2KfLw9Z'],
      ['DELETE', '/v1/tenants/kiwi/connection'],
      ['GET', '/v1/nothing-here'],
      ['DELETE', '/v1/tenants'],
      ['GET', '/v1'],
    ];
    for (const [method, path, body] of calls) {
      for (const key of [undefined, 'wrong-key-Zk8Rt3Wq7Xb2Nm5Lv9Hc4Jp6Fs', `${FULL}x`]) {
        const got = await api.call(method, path, { ...(key !== undefined ? { key } : {}), ...(body !== undefined ? { body } : {}) });
        const expected = key === undefined ? one : { ...one, headers: { ...one.headers, 'www-authenticate': 'Bearer error="invalid_token"' } };
        expect(shape(got), `${method} ${path} ${key ?? '(no key)'}`).toEqual(expected);
      }
    }
    expect(await rig.app.queues.sync.getJobCounts('waiting', 'delayed', 'active')).toEqual({ waiting: 0, delayed: 0, active: 0 });
  });

  it('lists the tenants a key may see, with what status shows', async () => {
    const all = await api.call<{ items: { id: string; platform: string; connection: { state: string } | null; lastRun: unknown; lastWebhook: unknown; deadLetters: { total: number } }[] }>('GET', '/v1/tenants', { key: FULL });
    expect(all.status).toBe(200);
    expect(all.body.items.map((t) => t.id)).toEqual(['acme', 'beta', 'kiwi']);
    const kiwi = all.body.items.find((t) => t.id === 'kiwi')!;
    expect(kiwi.connection?.state).toBe('awaiting_connection');
    expect(all.body.items.find((t) => t.id === 'acme')!.connection).toBeNull();
    for (const t of all.body.items) expect(t.lastWebhook).toBeNull();
    const limited = await api.call<{ items: { id: string }[] }>('GET', '/v1/tenants', { key: BETA_ONLY });
    expect(limited.body.items.map((t) => t.id)).toEqual(['beta']);
    // One tenant: the same view as its item in the list.
    for (const t of all.body.items) {
      const one = await api.call('GET', `/v1/tenants/${t.id}`, { key: FULL });
      expect(one.status).toBe(200);
      expect(one.body).toEqual(t);
    }
  });

  it('answers 404 for an unknown tenant only after authentication, and alike for a tenant the key may not see', async () => {
    const unknown = await api.call<Problem>('GET', '/v1/tenants/nobody/runs', { key: FULL });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json');
    for (const [method, path, body] of [
      ['GET', '/v1/tenants/acme'],
      ['GET', '/v1/tenants/acme/runs'],
      ['GET', '/v1/tenants/acme/runs/run-1'],
      ['POST', '/v1/tenants/acme/runs', { mode: 'incremental' }],
      ['GET', '/v1/tenants/acme/dead-letters'],
      ['POST', '/v1/tenants/acme/dead-letters/replay'],
      ['POST', '/v1/tenants/kiwi/connect-links', {}],
      ['GET', '/v1/tenants/kiwi/connect-links'],
      ['DELETE', '/v1/tenants/kiwi/connect-links/Xq3b_2KfLw9Z'],
      ['DELETE', '/v1/tenants/kiwi/connection'],
    ] as [string, string, unknown?][]) {
      const hidden = await api.call('GET' === method ? method : method, path, { key: BETA_ONLY, ...(body !== undefined ? { body } : {}) });
      const none = await api.call(method, path.replace(/\/(acme|kiwi)(\/|$)/, '/nobody$2'), { key: FULL, ...(body !== undefined ? { body } : {}) });
      expect(shape(hidden), `${method} ${path}`).toEqual(shape(none));
      expect(hidden.status).toBe(404);
    }
    expect(await rig.app.queues.sync.getJobCounts('waiting', 'delayed', 'active')).toEqual({ waiting: 0, delayed: 0, active: 0 });
  });

  it('refuses a bad body with 422 and its zod issues, a body not JSON with 415 or 400, a bad query with 400', async () => {
    const missing = await api.call<Problem>('POST', '/v1/tenants/acme/runs', { key: FULL, body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.errors?.map((e) => `${e.in} ${e.path.join('.')}`)).toEqual(['body mode']);
    expect(missing.body.errors?.[0]?.message).toBe('mode must be one of incremental, full, reconcile');
    // Each field named, an unknown one under its own name, with the form it takes.
    const wrong = await api.call<Problem>('POST', '/v1/tenants/acme/runs', { key: FULL, body: { mode: 'sideways', since: '2026-13-01', extra: 1 } });
    expect(wrong.status).toBe(422);
    expect(Object.fromEntries((wrong.body.errors ?? []).map((e) => [e.path.join('.'), e.message]))).toEqual({
      extra: 'extra is not a field of this body (its fields: mode, since)',
      mode: 'mode must be one of incremental, full, reconcile',
      since: 'since must be a date, YYYY-MM-DD',
    });
    const sinceAlone = await api.call<Problem>('POST', '/v1/tenants/acme/runs', { key: FULL, body: { mode: 'incremental', since: '2026-01-01' } });
    expect(sinceAlone.status).toBe(422);
    expect(sinceAlone.body.errors?.[0]?.path).toEqual(['since']);
    expect(sinceAlone.body.errors?.[0]?.message).toMatch(/^since goes with mode full only/);
    expect((await api.call('POST', '/v1/tenants/acme/runs', { key: FULL, raw: 'mode=full', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    const malformed = await api.call<Problem>('POST', '/v1/tenants/acme/runs', { key: FULL, raw: '{"mode":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.type).toBe('tag:collections-sync,2026:problem/malformed-body');
    const big = await api.call('POST', '/v1/tenants/acme/runs', { key: FULL, raw: JSON.stringify({ mode: 'full', pad: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } });
    expect(big.status).toBe(413);
    for (const [path, max] of [['/v1/tenants/acme/runs', 100], ['/v1/tenants/acme/dead-letters', 500], ['/v1/tenants', 100]] as const) {
      for (const limit of ['0', 'abc', '1.5', '100000', '']) {
        const query = await api.call<Problem>('GET', `${path}?limit=${limit}`, { key: FULL });
        expect(query.status, `${path}?limit=${limit}`).toBe(400);
        expect(query.body.errors, `${path}?limit=${limit}`).toEqual([{ in: 'query', path: ['limit'], message: `limit must be an integer from 1 to ${max}` }]);
      }
    }
    expect(await rig.app.queues.sync.getJobCounts('waiting', 'delayed', 'active')).toEqual({ waiting: 0, delayed: 0, active: 0 });
  });

  it('answers 404 to an unknown path and 405 to another method, once authenticated', async () => {
    const nothing = await api.call<Problem>('GET', '/v1/nothing-here', { key: FULL });
    expect(nothing.status).toBe(404);
    // It points to the document, where every route is, rather than naming one.
    expect(nothing.body.detail).toBe('no such route: GET /v1/nothing-here (every route is in the document, GET /v1/openapi.json, served without a key)');
    const method = await api.call<Problem>('DELETE', '/v1/tenants', { key: FULL });
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toBe('GET, POST');
    expect((await api.call('PUT', '/v1/tenants/acme/runs', { key: FULL, body: {} })).headers.get('allow')).toBe('POST, GET');
  });

  it('runs a requested run: it lands the records, then shows as finished with its counts and dead letters', async () => {
    const asked = await api.call<Requested>('POST', '/v1/tenants/acme/runs', { key: FULL, body: { mode: 'full' } });
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ tenantId: 'acme', mode: 'full', deduplicated: false, runId: `run-${asked.body.jobId}` });
    expect(asked.headers.get('location')).toBe(asked.body.links.run);
    const finished = await waitForRun(rig.app.stores.runs, 'acme', { mode: 'full', requestedAt: Date.parse(asked.body.requestedAt), timeoutMs: 60_000 });
    expect(finished.runId).toBe(asked.body.runId);
    expect(finished.trigger).toBe('api');
    const data = rig.sim.data('client-acme');
    expect(data.contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C2']);
    expect(data.invoices).toHaveLength(2);
    const run = await api.call<Run>('GET', asked.body.links.run, { key: FULL });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ runId: asked.body.runId, state: 'finished', outcome: 'partial' });
    expect(run.body.counts.byEntity['contacts']?.['created']).toBe(2);
    expect(run.body.counts.byEntity['invoices']?.['created']).toBe(2);
    expect(run.body.deadLetters.items).toHaveLength(BAD);
    expect(run.body.deadLetters.items.every((d) => d.runId === asked.body.runId)).toBe(true);
    const list = await api.call<{ items: { runId: string }[] }>('GET', '/v1/tenants/acme/runs?limit=5', { key: FULL });
    expect(list.body.items[0]?.runId).toBe(asked.body.runId);
    const tenants = await api.call<{ items: { id: string; lastRun: { runId: string; outcome: string } | null; deadLetters: { total: number } }[] }>('GET', '/v1/tenants', { key: FULL });
    const acme = tenants.body.items.find((t) => t.id === 'acme')!;
    expect(acme.lastRun).toMatchObject({ runId: asked.body.runId, outcome: 'partial' });
    expect(acme.deadLetters.total).toBe(BAD);
    expect((await api.call('GET', '/v1/tenants/acme/runs/run-nope', { key: FULL })).status).toBe(404);
  });

  it('answers for a run not started yet from its job (delayed), not 404', async () => {
    const { jobId } = await requestSync(rig.app.queues.sync, 'beta', 'reconcile', { trigger: 'test', delayMs: 600_000 });
    try {
      const run = await api.call<Run>('GET', `/v1/tenants/beta/runs/run-${jobId ?? ''}`, { key: FULL });
      expect(run.status).toBe(200);
      expect(run.body).toMatchObject({ runId: `run-${jobId ?? ''}`, state: 'delayed', outcome: null });
      // Not another tenant's.
      expect((await api.call('GET', `/v1/tenants/acme/runs/run-${jobId ?? ''}`, { key: FULL })).status).toBe(404);
    } finally {
      await rig.app.queues.sync.remove(jobId ?? '');
    }
  });

  it('gives the first answer again for a retried Idempotency-Key, 422 for the key on another body, 409 while one is under way', async () => {
    const headers = { 'idempotency-key': 'order-7781-reconcile' };
    const first = await api.call<Requested>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'reconcile' }, headers });
    expect(first.status).toBe(202);
    await waitForRun(rig.app.stores.runs, 'beta', { mode: 'reconcile', requestedAt: Date.parse(first.body.requestedAt), timeoutMs: 60_000 });
    const again = await api.call<Requested>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'reconcile' }, headers });
    expect(again.status).toBe(202);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await api.call<Problem>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'full' }, headers });
    expect(other.status).toBe(422);
    expect(other.body.type).toBe('tag:collections-sync,2026:problem/idempotency-key-reused');
    // Another key name's same Idempotency-Key is its own.
    const theirs = await api.call<Requested>('POST', '/v1/tenants/beta/runs', { key: BETA_ONLY, body: { mode: 'full' }, headers });
    expect(theirs.status).toBe(202);
    await waitForRun(rig.app.stores.runs, 'beta', { mode: 'full', requestedAt: Date.parse(theirs.body.requestedAt), timeoutMs: 60_000 });
    // A request under way holds its key (claimed here as the API claims it).
    const store = new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX);
    expect((await store.claim('beta', 'full', 'under-way-1', 'POST /v1/tenants/beta/runs {"mode":"incremental"}')).kind).toBe('run');
    const busy = await api.call<Problem>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'incremental' }, headers: { 'idempotency-key': 'under-way-1' } });
    expect(busy.status).toBe(409);
    expect(busy.body.type).toBe('tag:collections-sync,2026:problem/idempotency-key-in-flight');
    // A key too long, or with a character outside printable ASCII, is the same problem whichever rule it breaks.
    for (const bad of ['k'.repeat(256), 'k'.repeat(300), 'tab\tinside']) {
      const refused = await api.call<Problem>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'incremental' }, headers: { 'idempotency-key': bad } });
      expect(refused.status, `${bad.length} characters`).toBe(400);
      expect(refused.body.type, `${bad.length} characters`).toBe('tag:collections-sync,2026:problem/invalid-idempotency-key');
      expect(refused.body.errors, `${bad.length} characters`).toEqual([{ in: 'header', path: ['Idempotency-Key'], message: 'not 1-255 printable ASCII characters' }]);
    }
    expect(await rig.app.queues.sync.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 0 });
  });

  it('pages the dead letters newest first with a cursor, by entity, and refuses a cursor it did not give', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Answer<Page> = await api.call<Page>('GET', `/v1/tenants/acme/dead-letters?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: FULL });
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((d) => d.key));
      cursor = page.body.next;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(seen.sort()).toEqual(Array.from({ length: BAD }, (_, i) => `contacts:id:BAD${i + 1}`));
    expect(pages).toBe(3);
    const contacts = await api.call<Page>('GET', '/v1/tenants/acme/dead-letters?entity=contacts', { key: FULL });
    expect(contacts.body.items).toHaveLength(BAD);
    expect(contacts.body.next).toBeNull();
    expect((await api.call<Page>('GET', '/v1/tenants/acme/dead-letters?entity=invoices', { key: FULL })).body.items).toEqual([]);
    const bad = await api.call<Problem>('GET', '/v1/tenants/acme/dead-letters?cursor=bm90LWEtY3Vyc29y', { key: FULL });
    expect(bad.status).toBe(400);
    expect(bad.body.errors?.[0]?.path).toEqual(['cursor']);
    expect((await api.call('GET', '/v1/tenants/acme/dead-letters?entity=widgets', { key: FULL })).status).toBe(400);
  });

  it('requests a replay of the dead letters (202), which runs and says how many it could not replay; refuses a body it has no use for', async () => {
    // The replay takes no body: one sent (a filter it would ignore) is refused, naming it, whatever its type.
    for (const [raw, type] of [['{"entity":"invoices"}', 'application/json'], ['entity=invoices', 'text/plain']] as const) {
      const refused = await api.call<Problem>('POST', '/v1/tenants/acme/dead-letters/replay', { key: FULL, raw, headers: { 'content-type': type } });
      expect(refused.status, type).toBe(422);
      expect(refused.body.errors).toEqual([{ in: 'body', path: [], message: 'the body: /v1/tenants/{tenantId}/dead-letters/replay takes none (send the request without one)' }]);
    }
    const letters = await api.call<Page>('GET', '/v1/tenants/acme/dead-letters?limit=500', { key: FULL });
    const left = letters.body.items.filter((d) => !d.replayable).length;
    expect(left).toBe(BAD);
    const asked = await api.call<Requested>('POST', '/v1/tenants/acme/dead-letters/replay', { key: FULL });
    expect(asked.status).toBe(202);
    expect(asked.body.mode).toBe('replay');
    const run = await waitForRun(rig.app.stores.runs, 'acme', { mode: 'replay', requestedAt: Date.parse(asked.body.requestedAt), timeoutMs: 60_000 });
    expect(run.trigger).toBe('api');
    const shown = await api.call<Run>('GET', asked.body.links.run, { key: FULL });
    expect(shown.body.state).toBe('finished');
    // Letters kept without their record cannot be replayed: the run says how many are left and is partial, as the CLI says.
    expect(shown.body.outcome).toBe('partial');
    expect(shown.body.counts.byEntity['contacts']?.['needsSourceFix']).toBe(left);
    expect((await api.call<Page>('GET', '/v1/tenants/acme/dead-letters?limit=500', { key: FULL })).body.items).toHaveLength(BAD);
  });

  it('ends paging with next null on the last page: limit=1 over three tenants, and dead letters whose last page is full', async () => {
    const ids: string[] = [];
    const nexts: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer<{ items: { id: string }[]; next: string | null }> = await api.call('GET', `/v1/tenants?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { key: FULL });
      ids.push(...page.body.items.map((t) => t.id));
      nexts.push(page.body.next);
      cursor = page.body.next;
    } while (cursor !== null && nexts.length < 10);
    expect(ids).toEqual(['acme', 'beta', 'kiwi']);
    expect(nexts.map((n) => n === null)).toEqual([false, false, true]);
    // Dead letters: BAD of them; a page of exactly that many is the last one, and so is the BAD-th page of one.
    expect((await api.call<Page>('GET', `/v1/tenants/acme/dead-letters?limit=${BAD}`, { key: FULL })).body.next).toBeNull();
    const pages: Page[] = [];
    let next: string | null = null;
    do {
      const page: Answer<Page> = await api.call<Page>('GET', `/v1/tenants/acme/dead-letters?entity=contacts&limit=1${next ? `&cursor=${next}` : ''}`, { key: FULL });
      pages.push(page.body);
      next = page.body.next;
    } while (next !== null && pages.length < 10);
    expect(pages.map((p) => p.items.length)).toEqual(Array.from({ length: BAD }, () => 1));
    expect(new Set(pages.map((p) => p.items[0]?.key)).size).toBe(BAD);
  });

  it('gives every answer a Request-Id: the caller\'s when sane (Request-Id, else X-Request-Id), else its own; logged on the request\'s line', async () => {
    const mine = await api.call('GET', '/v1/tenants/acme', { key: FULL, headers: { 'request-id': 'order-7781.lookup:2' } });
    expect(mine.headers.get('request-id')).toBe('order-7781.lookup:2');
    const x = await api.call('GET', '/v1/tenants/acme', { key: FULL, headers: { 'x-request-id': 'b3f1c0de-9a7e-4c1a-8f00-5e1d2c3b4a59' } });
    expect(x.headers.get('request-id')).toBe('b3f1c0de-9a7e-4c1a-8f00-5e1d2c3b4a59');
    for (const insane of ['has space', 'quote"d', 'x'.repeat(129), 'semi;colon', '{"json":1}']) {
      const got = await fetch(`${base}/v1/tenants/acme`, { headers: { authorization: `Bearer ${FULL}`, 'request-id': insane } });
      expect(got.headers.get('request-id'), insane).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    }
    const two = await Promise.all([api.call('GET', '/v1/nothing', { key: FULL }), api.call('GET', '/v1/tenants'), api.call('GET', '/v1/openapi.json')]);
    for (const a of two) expect(a.headers.get('request-id')).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    expect(new Set(two.map((a) => a.headers.get('request-id'))).size).toBe(3);
    const line = rig.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'api request' && l['requestId'] === 'order-7781.lookup:2');
    expect(line).toMatchObject({ route: '/v1/tenants/{tenantId}', status: 200, key: 'full' });
  });

  it('makes a connect link from no body, an empty JSON body or {} alike (the body is optional, as the document says)', async () => {
    const doc = openApiDocument() as { paths: Record<string, { post?: { requestBody?: { required?: boolean } } }> };
    expect(doc.paths['/v1/tenants/{tenantId}/connect-links']?.post?.requestBody?.required).toBe(false);
    for (const o of [{}, { raw: '', headers: { 'content-type': 'application/json' } }, { body: {} }]) {
      const made = await api.call<Link>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, ...o });
      expect(made.status, JSON.stringify(o)).toBe(201);
      expect(Date.parse(made.body.expiresAt) - Date.now()).toBeGreaterThan(6 * 86_400_000);
    }
    // A run's body is required: an empty one lacks its mode.
    const run = await api.call<Problem>('POST', '/v1/tenants/acme/runs', { key: FULL, raw: '', headers: { 'content-type': 'application/json' } });
    expect(run.status).toBe(422);
    expect(run.body.errors?.[0]?.path).toEqual(['mode']);
  });


  it('makes a connect link for a Xero tenant, and says why not for a file tenant or a bad expiry', async () => {
    const made = await api.call<Link>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: '2h' } });
    expect(made.status).toBe(201);
    expect(made.body.url.startsWith(`${publicUrl}/connect/`)).toBe(true);
    expect(made.body.redirectUri).toBe(`${publicUrl}/oauth/callback`);
    expect(made.body).toMatchObject({ tenantId: 'kiwi', reconnect: false, linkId: expect.stringMatching(/^[A-Za-z0-9_-]{12}$/) as unknown });
    expect(Date.parse(made.body.expiresAt) - Date.now()).toBeGreaterThan(3_500_000);
    const defaulted = await api.call<{ expiresAt: string }>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL });
    expect(defaulted.status).toBe(201);
    expect(Date.parse(defaulted.body.expiresAt) - Date.now()).toBeGreaterThan(6 * 86_400_000);
    const file = await api.call<Problem>('POST', '/v1/tenants/acme/connect-links', { key: FULL, body: {} });
    expect(file.status).toBe(409);
    expect(file.body.type).toBe('tag:collections-sync,2026:problem/not-connectable');
    expect((await api.call('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: '90d' } })).status).toBe(422);
    // With an Idempotency-Key the retry gets the same link, and the answer kept in Redis holds it sealed, never in clear.
    const headers = { 'idempotency-key': 'link-kiwi-1' };
    const keyed = await api.call<{ url: string }>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: '2h' }, headers });
    expect(keyed.status).toBe(201);
    const retried = await api.call<{ url: string }>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: '2h' }, headers });
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.text).toBe(keyed.text);
    const kept = await rig.app.redis.get(new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX).key('kiwi', 'full', 'link-kiwi-1'));
    expect(kept).not.toBeNull();
    const link = new URL(keyed.body.url);
    for (const part of [keyed.body.url, link.pathname, link.pathname.split('/').at(-1)!, '/connect/']) expect(kept).not.toContain(part);
    expect((await api.call('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: 'soon' } })).status).toBe(422);
    expect((await api.call('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { reconnect: 'yes' } })).status).toBe(422);
  });

  it('lists the outstanding connect links, revokes one by its id (then the link is refused), and refuses a plain link for a connected tenant', async () => {
    const made = await api.call<Link>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { expires: '1h' } });
    const listed = await api.call<{ items: { linkId: string; reconnect: boolean; by: string; createdAt: string; expiresAt: string }[] }>('GET', '/v1/tenants/kiwi/connect-links', { key: FULL });
    expect(listed.status).toBe(200);
    expect(listed.body.items.find((l) => l.linkId === made.body.linkId)).toMatchObject({ reconnect: false, by: 'api:full', expiresAt: made.body.expiresAt });
    const revoked = await api.call('DELETE', `/v1/tenants/kiwi/connect-links/${made.body.linkId}`, { key: FULL });
    expect(revoked.status).toBe(204);
    expect((await fetch(made.body.url, { redirect: 'manual' })).status).toBe(401);
    const again = await api.call<Problem>('DELETE', `/v1/tenants/kiwi/connect-links/${made.body.linkId}`, { key: FULL });
    expect(again.status).toBe(404);
    expect(again.body.type).toBe('tag:collections-sync,2026:problem/no-such-link');
    expect((await api.call<{ items: { linkId: string }[] }>('GET', '/v1/tenants/kiwi/connect-links', { key: FULL })).body.items.map((l) => l.linkId)).not.toContain(made.body.linkId);

    // Kiwi gets a connection (the chain's first link from a grant, and its binding, as a callback writes them).
    const org = '8f6c2c1e-2b7a-4c55-9d1e-0a1b2c3d4e5f';
    const cipher = TokenCipher.fromText(TOKEN_KEY);
    const auth = new PlatformAuth({ platform: xeroOAuth.chain, redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, connection: org, clientId: 'XEROCLIENT', clientSecret: new Secret('xero-secret'), tokenUrl: 'http://127.0.0.1:9/token', cipher, dispatcher: new Agent() });
    await auth.connect({ refreshToken: 'refresh-of-a-grant', accessToken: 'access-of-a-grant', expiresInS: 1800 });
    await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).set('kiwi', { platform: 'xero', connection: org, connectedAt: Date.now() });
    const refused = await api.call<Problem>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.type).toBe('tag:collections-sync,2026:problem/already-connected');
    expect(refused.body.detail).toContain('"reconnect": true');
    const reconnect = await api.call<Link>('POST', '/v1/tenants/kiwi/connect-links', { key: FULL, body: { reconnect: true } });
    expect(reconnect.status).toBe(201);
    expect(reconnect.body.reconnect).toBe(true);
    expect((await fetch(reconnect.body.url, { redirect: 'manual' })).status).toBe(302);
    await auth.disconnect();
    await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).remove('kiwi');
    // Revoking the connection of a tenant that has none revokes its outstanding links (test/api/tenant-filters.test.ts revokes a connection).
    const outstanding = (await api.call<{ items: unknown[] }>('GET', '/v1/tenants/kiwi/connect-links', { key: FULL })).body.items.length;
    expect(outstanding).toBeGreaterThan(0);
    const none = await api.call('DELETE', '/v1/tenants/kiwi/connection', { key: FULL });
    expect([none.status, none.body]).toEqual([200, { tenantId: 'kiwi', connection: null, platform: 'not connected', chainDeleted: false, linksRevoked: outstanding }]);
    expect((await api.call<{ items: unknown[] }>('GET', '/v1/tenants/kiwi/connect-links', { key: FULL })).body.items).toEqual([]);
  });

  it('counts requests by key name and logs them without the key', async () => {
    const text = await rig.metrics.registry.getSingleMetricAsString('collections_sync_api_requests_total');
    expect(text).toContain('key="full",route="/v1/tenants",status="200"');
    expect(text).toContain('key="(none)"');
    const all = rig.logs.join('');
    expect(all).not.toContain(FULL);
    expect(all).not.toContain(BETA_ONLY);
    const line = rig.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'api request' && l['route'] === '/v1/tenants/{tenantId}/runs');
    expect(line).toBeDefined();
    expect([typeof line?.['key'], typeof line?.['method'], typeof line?.['status'], typeof line?.['ms']]).toEqual(['string', 'string', 'number', 'number']);
    expect(JSON.stringify(line)).not.toMatch(/authorization|bearer/i);
  });

  it('creates, patches and deletes a tenant; keeps those of the file read-only and tenant writes to keys of every tenant (test/api/tenants.test.ts has the rest)', async () => {
    const merge = { 'content-type': 'application/merge-patch+json' };
    const made = await api.call('POST', '/v1/tenants', { key: FULL, body: { id: 'delta', collections: { clientId: 'client-delta', clientSecret: 'secret-delta-x9' }, platform: { kind: 'memory', name: 'delta' } } });
    expect(made.status).toBe(201);
    const patched = await api.call('PATCH', '/v1/tenants/delta', { key: FULL, body: { inFlightLimit: 2 }, headers: { ...merge, 'if-match': made.headers.get('etag')! } });
    expect(patched.status).toBe(200);
    expect((await api.call('DELETE', '/v1/tenants/delta', { key: FULL })).status).toBe(204);
    const patch = await api.call<Problem>('PATCH', '/v1/tenants/acme', { key: FULL, body: { inFlightLimit: 2 }, headers: merge });
    expect(patch.body.type).toBe('tag:collections-sync,2026:problem/tenant-from-file');
    const del = await api.call<Problem>('DELETE', '/v1/tenants/acme', { key: FULL });
    expect(del.body.type).toBe('tag:collections-sync,2026:problem/tenant-from-file');
    const create = await api.call<Problem>('POST', '/v1/tenants', { key: BETA_ONLY, body: { id: 'delta', collections: { clientId: 'c', clientSecret: 's' }, platform: { kind: 'memory' } } });
    expect(create.body.type).toBe('tag:collections-sync,2026:problem/key-limited');
  });

  it('lists the events sent to receivers, one by id, redelivers one and sends a test (test/api/events.test.ts has the rest)', async () => {
    const page = await until(async () => (await api.call<{ items: { id: string; tenantId: string }[]; next: string | null }>('GET', '/v1/events?limit=100', { key: FULL })).body, (p) => p.items.length > 0);
    const first = page.items[0]!;
    expect((await api.call<{ id: string }>('GET', `/v1/events/${first.id}`, { key: FULL })).body.id).toBe(first.id);
    const redelivered = await api.call('POST', `/v1/events/${first.id}/redeliver`, { key: FULL });
    expect(redelivered.status).toBe(202);
    const test = await api.call<{ delivered: boolean }>('POST', '/v1/webhooks/test', { key: FULL, body: { tenantId: 'beta' } });
    expect([test.status, test.body.delivered]).toEqual([200, true]);
  });

  it('checked every answer against the document, every route among them', () => {
    const operations = Object.entries(doc['paths'] as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    for (const op of operations) expect(api.checked.some((c) => c.startsWith(`${op} 2`)), op).toBe(true);
  });
});
