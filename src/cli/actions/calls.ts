/**
 * `calls campaign|one|list|report|confirm|release|cancel`: what runs (the commands are in ../commands/calls.ts). Every
 * input is checked here (tenant, template, numbers, list rows, settings) before a job is queued, so a bad one
 * never reaches the service. The worker plans and runs the campaign; `--wait` follows it to its report.
 */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import {
  createCallStores,
  exitCodeOfReport,
  formatReport,
  listFormatOf,
  newCampaignId,
  normalisePhone,
  parseCallList,
  parseDelimiter,
  resolveSettings,
  resolveUnknown,
  selectOverdue,
  waitForCampaign,
  type CallOverrides,
  type CallStores,
  type CampaignReport,
  type Target,
} from '../../calls/index.js';
import { uuid as uuidSchema } from '../../collections/schemas.js';
import type { TenantConfig } from '../../config/tenants.js';
import { campaignJobId, enqueueCampaign, enqueueSingleCall } from '../../queues/index.js';
import { out, outJson, parseDateOption, requireTenant, UsageError, withRuntime, type Runtime } from '../runtime.js';
import { parseWaitTimeout, reportWaitEnded, WaitEnded, waitUnderWatch, type WaitFlags } from './wait.js';

function withCalls<T>(fn: (rt: Runtime, calls: CallStores) => Promise<T>): Promise<T> {
  return withRuntime((rt) => fn(rt, createCallStores(rt.app.redis, rt.env.KEY_PREFIX, { cooldownMs: rt.env.CALL_COOLDOWN_HOURS * 3_600_000, retentionMs: rt.env.CAMPAIGN_RETENTION_DAYS * 86_400_000 })));
}

function intOption(value: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max} (got "${value}")`);
  return n;
}

function amountOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be an amount of 0 or more (got "${value}")`);
  return n;
}

export interface SettingFlags {
  template?: string;
  updateExisting?: boolean;
  countryCode?: string;
  batchSize?: string;
  requestSize?: string;
  currency?: string;
}

const FLAG_OF: Record<string, string> = {
  aiSettingsTemplateId: '--template',
  updateExisting: '--update-existing',
  countryCode: '--country-code',
  batchSize: '--batch-size',
  requestSize: '--request-size',
  currency: '--currency',
  defaultRegion: 'calls.defaultRegion (tenants file)',
};

/** The campaign's overrides from flags, checked together with the tenant's settings; every problem at once. */
function overridesOf(tenant: TenantConfig, o: SettingFlags): CallOverrides {
  const problems: string[] = [];
  if (o.template !== undefined && !uuidSchema.safeParse(o.template).success) problems.push(`--template must be the UUID of an AI settings template (got "${o.template}")`);
  if (o.countryCode !== undefined && !/^[A-Z]{2}$/.test(o.countryCode)) problems.push(`--country-code must be two upper-case letters, e.g. SA (got "${o.countryCode}")`);
  if (o.currency !== undefined && !/^[A-Z]{3}$/.test(o.currency)) problems.push(`--currency must be three upper-case letters, e.g. SAR (got "${o.currency}")`);
  let batchSize: number | undefined;
  let requestSize: number | undefined;
  try {
    batchSize = intOption(o.batchSize, '--batch-size', 10, 1000);
  } catch (err) {
    problems.push((err as Error).message);
  }
  try {
    requestSize = intOption(o.requestSize, '--request-size', 1, 1000);
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  const overrides: CallOverrides = {
    ...(o.template !== undefined ? { aiSettingsTemplateId: o.template } : {}),
    ...(o.updateExisting !== undefined ? { updateExisting: o.updateExisting } : {}),
    ...(o.countryCode !== undefined ? { countryCode: o.countryCode } : {}),
    ...(batchSize !== undefined ? { batchSize } : {}),
    ...(requestSize !== undefined ? { requestSize } : {}),
    ...(o.currency !== undefined ? { currency: o.currency } : {}),
  };
  const check = resolveSettings(tenant.calls, overrides);
  if (!check.ok) throw new UsageError(check.problems.map((p) => `${FLAG_OF[p.field] ?? p.field}: ${p.message}`).join('\n'));
  return overrides;
}

async function readList(path: string, tenant: TenantConfig, campaignId: string, o: { skipBadRows?: boolean; delimiter?: string }): Promise<{ targets: Target[]; notes: string[] }> {
  const skipBad = o.skipBadRows ?? false;
  const format = listFormatOf(path);
  if (!format) throw new UsageError(`--list ${path}: give a .csv, .tsv or .json file`);
  const delimiter = o.delimiter === undefined ? undefined : parseDelimiter(o.delimiter);
  if (o.delimiter !== undefined && (delimiter === undefined || format !== 'csv')) {
    throw new UsageError(format === 'csv' ? `--delimiter must be one of , ; | tab (got "${o.delimiter}")` : '--delimiter is for .csv and .tsv lists');
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--list ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const parsed = parseCallList(text, format, { tenant: tenant.id, campaignId, region: tenant.calls.defaultRegion }, delimiter ? { delimiter } : {});
  const notes = parsed.errors.map((e) => `  ${e.row > 0 ? `${parsed.unit} ${e.row}` : 'file'}: ${e.reason}`);
  const fatal = parsed.errors.some((e) => e.row <= 1);
  if (parsed.errors.length > 0 && (!skipBad || fatal || parsed.targets.length === 0)) {
    throw new UsageError(`--list ${path}: ${parsed.errors.length} bad row(s); nothing was queued${skipBad ? '' : ' (--skip-bad-rows calls the good ones)'}:\n${notes.join('\n')}`);
  }
  return { targets: parsed.targets, notes };
}

async function finish(rt: Runtime, calls: CallStores, id: string, o: { wait?: boolean; json?: boolean } & WaitFlags, queued: string): Promise<number> {
  if (!o.wait) {
    if (o.json) outJson({ campaignId: id, status: 'queued' });
    else out(`${queued}; a worker runs it. Follow it with: collections-sync calls report --campaign ${id}`);
    return 0;
  }
  // A campaign job is the campaign's own (its id is the campaign's; never joined to another request).
  const ended = await waitUnderWatch(rt, rt.app.queues.calls, { jobId: campaignJobId(id), requestedAt: 0 }, o, (signal, timeoutMs) => waitForCampaign(calls.store, id, { signal, timeoutMs }));
  if (ended instanceof WaitEnded) {
    if (!o.json) out(`${queued}; not waited for to the end. Follow it with: collections-sync calls report --campaign ${id}`);
    return reportWaitEnded(ended, o.json, { campaignId: id });
  }
  const report = await calls.store.report(id);
  if (!report) throw new Error(`campaign ${id} vanished`);
  printReport(report, o.json);
  return exitCodeOfReport(report);
}

function printReport(report: CampaignReport, json: boolean | undefined): void {
  if (json) outJson(report);
  else for (const line of formatReport(report)) out(line);
}

export type CampaignOptions = SettingFlags & {
  tenant: string;
  overdueDays?: string;
  minAmount?: string;
  asOf?: string;
  list?: string;
  delimiter?: string;
  skipBadRows?: boolean;
  dryRun?: boolean;
  yes?: boolean;
  wait?: boolean;
  json?: boolean;
} & WaitFlags;

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * A campaign places real calls, so it asks first (issue 12), as `id-map rebuild` does: `--yes`, or a "y" typed on a
 * terminal. Without either, nothing is queued, the message says how many numbers it would call, and the command
 * exits 2 (a confirmation refused, one code for every command: docs/decisions/0107).
 */
async function confirm(o: { yes?: boolean; json?: boolean }, tenant: string, what: string): Promise<void> {
  if (o.yes) return;
  const question = `this campaign calls ${what} for ${tenant}`;
  if (!process.stdin.isTTY || !process.stderr.isTTY || o.json) {
    throw new UsageError(`${question}. Nothing was queued: add --yes to place the calls (--dry-run shows who would be called).`);
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question}. Place the calls? [y/N] `);
    if (/^y(es)?$/i.test(answer.trim())) return;
    // A confirmation refused is a usage error, exit 2, as without --yes (README "The command line").
    throw new UsageError('not confirmed; nothing was queued');
  } finally {
    rl.close();
  }
}

export async function campaign(o: CampaignOptions): Promise<number> {
  return withCalls(async (rt, stores) => {
    const { app } = rt;
    const tenant = requireTenant(app, o.tenant);
    if ((o.list === undefined) === (o.overdueDays === undefined)) throw new UsageError('give --overdue-days (a selection of overdue invoices) or --list FILE, one of them');
    if (o.delimiter !== undefined && o.list === undefined) throw new UsageError('--delimiter goes with --list FILE');
    const overrides = overridesOf(tenant, o);
    if (o.wait || o.dryRun) parseWaitTimeout(o.waitTimeout);
    const campaignId = newCampaignId(o.dryRun ? 'dry' : 'cmp');
    const common = { tenantId: tenant.id, campaignId, overrides, dryRun: o.dryRun ?? false, requestedAt: Date.now() };
    if (o.list !== undefined) {
      const { targets, notes } = await readList(o.list, tenant, campaignId, o);
      if (notes.length > 0 && !o.json) out(`left out of the list:\n${notes.join('\n')}`);
      if (!o.dryRun) await confirm(o, tenant.id, `${plural(targets.length, 'number')} of the list ${o.list}`);
      await enqueueCampaign(app.queues.calls, stores.store, { ...common, source: { kind: 'list' } }, targets);
    } else {
      const overdueDays = intOption(o.overdueDays, '--overdue-days', 0, 3650) ?? 0;
      const minAmount = amountOption(o.minAmount, '--min-amount') ?? 0;
      const asOf = o.asOf === undefined ? undefined : parseDateOption(o.asOf, '--as-of');
      const criteria = { overdueDays, minAmount, ...(asOf ? { asOf } : {}) };
      if (!o.dryRun) {
        // The worker plans against the service (reminders switched off there are left out) and the call ledger
        // (numbers in cooldown); the record mirror alone gives the most it can call.
        const settings = resolveSettings(tenant.calls, overrides);
        const currency = settings.ok ? settings.settings.currency : 'SAR';
        const most = await selectOverdue(app.mirror, { tenant: tenant.id, campaignId, region: tenant.calls.defaultRegion, remindersDisabled: new Set(), criteria, currency });
        const what = `up to ${plural(most.targets.length, 'number')} (customers with invoices ${overdueDays}+ days overdue, at least ${minAmount} outstanding; fewer if the service has their reminders off or a number is in cooldown)`;
        await confirm(o, tenant.id, what);
      }
      await enqueueCampaign(app.queues.calls, stores.store, { ...common, source: { kind: 'overdue', criteria } });
    }
    return finish(rt, stores, campaignId, { ...o, wait: Boolean(o.wait || o.dryRun) }, `queued campaign ${campaignId}`);
  });
}

export async function one(o: { tenant: string; contactUuid: string; wait?: boolean; json?: boolean } & WaitFlags): Promise<number> {
  return withCalls(async (rt, stores) => {
    const { app } = rt;
    const tenant = requireTenant(app, o.tenant);
    if (!uuidSchema.safeParse(o.contactUuid).success) throw new UsageError(`--contact-uuid must be a UUID (got "${o.contactUuid}")`);
    if (o.wait) parseWaitTimeout(o.waitTimeout);
    const wanted = o.contactUuid.toLowerCase();
    let found: { name: string; phoneNumber?: string | undefined; deleted: boolean } | undefined;
    for await (const batch of app.mirror.scan(tenant.id, 'contacts')) {
      found = batch.find((c) => c.uuid?.toLowerCase() === wanted) ?? found;
      if (found) break;
    }
    if (!found) throw new UsageError(`contact ${o.contactUuid} is not a synced contact of ${tenant.id} (run a sync first, or check the uuid)`);
    if (found.deleted) throw new UsageError(`contact ${o.contactUuid} (${found.name}) is deleted on the platform: not called`);
    const phone = normalisePhone(found.phoneNumber, tenant.calls.defaultRegion);
    if (!phone.ok) throw new UsageError(`contact ${o.contactUuid} (${found.name}) has no usable number: ${phone.reason}`);
    const campaignId = newCampaignId('one');
    await enqueueSingleCall(app.queues.calls, stores.store, { tenantId: tenant.id, campaignId, contactUuid: o.contactUuid, requestedAt: Date.now() });
    return finish(rt, stores, campaignId, o, `queued a call to ${found.name} (${phone.e164}) as ${campaignId}`);
  });
}

export async function list(o: { tenant?: string; unknown?: boolean; limit: string; json?: boolean }): Promise<void> {
  return withCalls(async ({ app }, { store }) => {
    const tenants = o.tenant ? [requireTenant(app, o.tenant)] : app.tenants();
    const limit = intOption(o.limit, '--limit', 1, 1000) ?? 20;
    const rows: Record<string, unknown>[] = [];
    for (const t of tenants) {
      if (o.unknown) {
        for (const [id, numbers] of await store.unknownOf(t.id)) {
          for (const e of await store.entries(id, numbers)) rows.push({ tenant: t.id, campaignId: id, number: e.number, label: e.label, contactUuid: e.contactUuid, request: e.request, since: new Date(e.at).toISOString(), reason: e.reason });
        }
        continue;
      }
      for (const meta of await store.recent(t.id, limit)) {
        const r = await store.report(meta.id);
        rows.push({ tenant: t.id, campaignId: meta.id, source: meta.source, status: meta.status, dryRun: meta.dryRun, createdAt: new Date(meta.createdAt).toISOString(), ...(r ? { counts: r.counts } : {}) });
      }
    }
    if (o.json) return outJson(rows, 2);
    if (rows.length === 0) return out(o.unknown ? 'no call has an unknown outcome' : 'no campaigns');
    for (const r of rows) {
      if (o.unknown) out(`${String(r['tenant'])}  ${String(r['campaignId'])}  ${String(r['number'])}  ${String(r['label'])}  since ${String(r['since'])}: ${typeof r['reason'] === 'string' ? r['reason'] : ''}`);
      else {
        const c = r['counts'] as CampaignReport['counts'] | undefined;
        const counts = c ? `called ${c.called + c.confirmed}, unknown ${c.unknown}, failed ${c.failed}, cooldown ${c.cooldown}, left out ${c.skipped}` : '';
        out(`${String(r['tenant'])}  ${String(r['campaignId'])}  ${String(r['source'])}${r['dryRun'] ? ' (dry run)' : ''}  ${String(r['status'])}  ${String(r['createdAt'])}  ${counts}`);
      }
    }
    return undefined;
  });
}

export async function report(o: { campaign: string; json?: boolean }): Promise<void> {
  return withCalls(async (_rt, { store }) => {
    const r = await store.report(o.campaign);
    if (!r) throw new UsageError(`no campaign ${o.campaign}`);
    printReport(r, o.json);
  });
}

export async function resolve(action: 'confirm' | 'release', o: { tenant: string; campaign: string; number?: string; json?: boolean }): Promise<void> {
  return withCalls(async ({ app }, stores) => {
    const tenant = requireTenant(app, o.tenant);
    let number: string | undefined;
    if (o.number !== undefined) {
      const phone = normalisePhone(o.number, tenant.calls.defaultRegion);
      if (!phone.ok) throw new UsageError(`--number: ${phone.reason}`);
      number = phone.e164;
    }
    let result;
    try {
      result = await resolveUnknown(stores.store, stores.callLedger, { tenant: tenant.id, campaignId: o.campaign, action, ...(number ? { number } : {}) });
    } catch (err) {
      if (err instanceof Error && 'code' in err && err.code === 'CALLS_OPERATOR_REFUSED') throw new UsageError(err.message);
      throw err;
    }
    if (o.json) return outJson({ action, campaignId: o.campaign, numbers: result.changed.map((e) => e.number) });
    if (result.changed.length === 0) return out(`campaign ${o.campaign} has no call with an unknown outcome`);
    out(`${action === 'confirm' ? 'confirmed' : 'released'} ${result.changed.length} call(s) of ${o.campaign}:`);
    for (const e of result.changed) out(`  ${e.number}  ${e.label}`);
    return undefined;
  });
}

export async function cancel(o: { campaign: string; json?: boolean }): Promise<void> {
  return withCalls(async (_rt, { store }) => {
    if (!(await store.cancel(o.campaign))) throw new UsageError(`no campaign ${o.campaign}`);
    if (o.json) return outJson({ campaignId: o.campaign, cancelled: true });
    return out(`campaign ${o.campaign} will stop before its next request`);
  });
}
