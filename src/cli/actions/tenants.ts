/**
 * `tenants list|show|add|remove|import`: the tenants of the file and those stored (created over the API or here), one
 * store with the API's (src/state/tenant-store.ts). `add` and `import` read `${VAR}` from this environment as the file
 * does, and store values; every worker applies a change within TENANT_STORE_POLL_MS.
 */
import { readFile } from 'node:fs/promises';
import type { App } from '../../app.js';
import { parseTenantEntries, tenantIssues, type TenantConfig } from '../../config/tenants.js';
import { purgeTenantState } from '../../state/purge.js';
import { publicSettings } from '../../state/tenant-store.js';
import { openRuntime, out, outJson, requireTenant, UsageError, type Runtime } from '../runtime.js';

async function withTenants<T>(fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = await openRuntime('producer');
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

interface Row {
  id: string;
  source: 'file' | 'api';
  platform: string;
  schedule: string;
}

const scheduleOf = (t: TenantConfig): string => (t.schedule.cron !== undefined ? `cron ${t.schedule.cron}${t.schedule.tz ? ` ${t.schedule.tz}` : ''}` : `every ${String((t.schedule.every ?? 900_000) / 1000)} s`);

function rowOf(app: App, t: TenantConfig): Row {
  return { id: t.id, source: app.sourceOf(t.id) ?? 'file', platform: t.platform.kind, schedule: scheduleOf(t) };
}

export async function list(o: { json?: boolean }): Promise<void> {
  await withTenants(async ({ app }) => {
    const rows = app
      .tenants()
      .map((t) => rowOf(app, t))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    if (o.json) return outJson({ tenants: rows });
    if (rows.length === 0) return out('no tenants: add one to the tenants file, or with `collections-sync tenants add FILE`');
    const w = Math.max(...rows.map((r) => r.id.length), 2);
    out(`${'id'.padEnd(w)}  source  platform    schedule`);
    for (const r of rows) out(`${r.id.padEnd(w)}  ${r.source.padEnd(6)}  ${r.platform.padEnd(10)}  ${r.schedule}`);
    out(`${String(rows.length)} tenants (${String(rows.filter((r) => r.source === 'api').length)} stored, the rest in the tenants file)`);
  });
}

export async function show(id: string, o: { json?: boolean }): Promise<void> {
  await withTenants(async ({ app }) => {
    const t = requireTenant(app, id);
    const stored = app.sourceOf(id) === 'api' ? app.tenantStore.get(id) : undefined;
    const { settings, secrets } = stored ? { settings: stored.settings, secrets: stored.secrets } : publicSettings(t);
    const view = {
      ...rowOf(app, t),
      settings,
      secretsSet: secrets,
      ...(stored ? { createdAt: new Date(stored.createdAt).toISOString(), updatedAt: new Date(stored.updatedAt).toISOString() } : {}),
    };
    if (o.json) return outJson(view);
    out(`${id}: ${view.platform}, from the ${view.source === 'api' ? 'store' : 'tenants file'}, ${view.schedule}`);
    if (stored) out(`  created ${view.createdAt ?? '?'}, changed ${view.updatedAt ?? '?'}`);
    out(`  secrets set: ${secrets.join(', ') || '(none)'}`);
    out(`  settings: ${JSON.stringify(settings)}`);
  });
}

/** The entries of a tenants file (`{"tenants": [...]}`), or of one entry (`{...}`), `-` for stdin, `${VAR}`s replaced. */
async function entriesOf(path: string): Promise<{ configs: TenantConfig[]; entries: Record<string, unknown>[] }> {
  let text: string;
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const trimmed = text.trimStart();
  // One entry is wrapped as a file of one tenant, so it is checked (and its errors named) the same way.
  const wrapped = trimmed.startsWith('{') && !/^\{\s*"tenants"\s*:/.test(trimmed) ? `{"tenants":[${text}]}` : text;
  const { file, entries } = parseTenantEntries(wrapped, process.env, path === '-' ? 'stdin' : path);
  return { configs: file.tenants, entries };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function needSealing(app: App): void {
  if (!app.tenantStore.sealing) throw new UsageError('stored tenants need PLATFORM_TOKEN_KEY (their secrets are sealed under it; e.g. `openssl rand -base64 32`)');
}

function refuseIssues(app: App, t: TenantConfig, others: readonly TenantConfig[] = app.tenants()): void {
  const issues = tenantIssues(t, others, app.env);
  if (issues.length > 0) throw new UsageError(`tenant ${t.id} cannot be stored:\n${issues.map((i) => `  - ${[t.id, ...i.path].join('.')}: ${i.message}`).join('\n')}`);
}

export async function add(path: string, o: { json?: boolean }): Promise<void> {
  await withTenants(async ({ app }) => {
    needSealing(app);
    const { configs, entries } = await entriesOf(path);
    if (configs.length !== 1) throw new UsageError(`tenants add takes one tenant (${path} has ${String(configs.length)}); use tenants import for a tenants file`);
    const [t, entry] = [configs[0]!, entries[0]!];
    if (app.sourceOf(t.id) === 'file') throw new UsageError(`${t.id} is a tenant of the tenants file: change it there (or import the file to move its tenants to the store)`);
    if (app.sourceOf(t.id) === 'api') throw new UsageError(`a tenant ${t.id} is stored already: remove it first, or change it over the API (PATCH /v1/tenants/${t.id})`);
    refuseIssues(app, t);
    const made = await app.tenantStore.create(entry);
    if (made.kind === 'exists') throw new UsageError(`a tenant ${t.id} is stored already`);
    if (o.json) return outJson({ id: t.id, added: true, secretsSet: made.tenant.secrets });
    out(`added ${t.id} (${t.platform.kind}); every worker schedules it within seconds`);
  });
}

export async function remove(id: string, o: { yes?: boolean; purge?: boolean; json?: boolean }): Promise<void> {
  await withTenants(async ({ app }) => {
    requireTenant(app, id);
    if (app.sourceOf(id) === 'file') throw new UsageError(`${id} is a tenant of the tenants file: remove it there`);
    const kept = o.purge ? 'its state is deleted' : `its state is kept ${String(app.env.TENANT_STATE_RETENTION_DAYS)} days (TENANT_STATE_RETENTION_DAYS)`;
    if (!o.yes) throw new UsageError(`would remove ${id} from the store (its schedules end, a run under way ends normally, ${kept}); nothing was done: add --yes to do it`);
    const removed = await app.tenantStore.remove(id);
    const purgedKeys = o.purge ? await purgeTenantState(app.redis, app.env.KEY_PREFIX, id) : undefined;
    if (o.json) return outJson({ id, removed, ...(purgedKeys !== undefined ? { purgedKeys } : {}) });
    out(removed ? `removed ${id}; every worker ends its schedules within seconds; ${o.purge ? `${String(purgedKeys)} keys of its state deleted` : `${kept} (adding it again resumes)`}` : `${id} was removed already`);
  });
}

export async function importFile(path: string, o: { json?: boolean }): Promise<void> {
  await withTenants(async ({ app }) => {
    needSealing(app);
    const { configs, entries } = await entriesOf(path);
    const done: { id: string; outcome: 'created' | 'replaced' | 'unchanged' }[] = [];
    // Each entry is checked against the others of the import and the stored ones, the file's aside (they move).
    const stored = app.tenantStore.list().map((s) => s.config);
    const others = [...stored.filter((s) => !configs.some((c) => c.id === s.id)), ...configs];
    for (const t of configs) refuseIssues(app, t, others);
    for (const [i, entry] of entries.entries()) done.push({ id: configs[i]!.id, outcome: await app.tenantStore.put(entry) });
    const inFile = done.filter((d) => app.sourceOf(d.id) === 'file').map((d) => d.id);
    if (o.json) return outJson({ tenants: done, stillInFile: inFile });
    const n = (k: string): number => done.filter((d) => d.outcome === k).length;
    out(`imported ${String(done.length)} tenants from ${path}: ${String(n('created'))} new, ${String(n('replaced'))} changed, ${String(n('unchanged'))} unchanged`);
    if (inFile.length > 0) out(`still in the tenants file (its entry is used while it is): ${inFile.join(', ')}; remove them from the file to finish the move`);
  });
}
