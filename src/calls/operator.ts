/**
 * What an operator does with calls whose outcome is unknown: confirm (the call happened: the number stays
 * refused for the cooldown, counted from now) or release (it did not: the number is free for a later
 * campaign). Only entries in state `unknown` are touched. Also: waiting for a campaign to end.
 */
import type { CampaignStore } from './campaign-store.js';
import type { CallLedger } from './call-ledger.js';
import { FINAL_STATUSES, type CampaignMeta, type EntryRecord } from './types.js';
import { sleep } from '../sleep.js';

export class OperatorError extends Error {
  readonly code = 'CALLS_OPERATOR_REFUSED';
}

export interface Resolution {
  action: 'confirm' | 'release';
  changed: EntryRecord[];
}

export async function resolveUnknown(
  store: CampaignStore,
  callLedger: CallLedger,
  o: { tenant: string; campaignId: string; action: 'confirm' | 'release'; number?: string },
): Promise<Resolution> {
  const meta = await store.get(o.campaignId);
  if (!meta || meta.tenant !== o.tenant) throw new OperatorError(`no campaign ${o.campaignId} for tenant ${o.tenant}`);
  const all = await store.entries(o.campaignId, o.number === undefined ? undefined : [o.number]);
  if (o.number !== undefined) {
    const entry = all[0];
    if (!entry) throw new OperatorError(`campaign ${o.campaignId} has no entry for ${o.number} (give the number in E.164 form, e.g. +966501234567)`);
    if (entry.state !== 'unknown') throw new OperatorError(`${o.number} in campaign ${o.campaignId} is ${entry.state}, not unknown: nothing to ${o.action}`);
  }
  const unknown = all.filter((e) => e.state === 'unknown');
  if (unknown.length === 0) return { action: o.action, changed: [] };
  const numbers = unknown.map((e) => e.number);
  if (o.action === 'confirm') await callLedger.confirm(o.tenant, o.campaignId, numbers);
  else await callLedger.release(o.tenant, o.campaignId, undefined, numbers);
  const now = Date.now();
  const changed = unknown.map((e) => ({
    ...e,
    state: o.action === 'confirm' ? ('confirmed' as const) : ('released' as const),
    reason: o.action === 'confirm' ? 'an operator confirmed the call happened' : 'an operator released the number: the call did not happen',
    at: now,
  }));
  await store.putEntries(o.campaignId, changed);
  await store.removeUnknown(o.tenant, o.campaignId, numbers);
  return { action: o.action, changed };
}

export class CampaignWaitTimeout extends Error {
  readonly code = 'CAMPAIGN_WAIT_TIMEOUT';
}

/** Polls until the campaign ends (done, cancelled, failed, previewed). */
export async function waitForCampaign(
  store: CampaignStore,
  id: string,
  o: { timeoutMs?: number; pollMs?: number; signal?: AbortSignal; onProgress?: (meta: CampaignMeta) => void } = {},
): Promise<CampaignMeta> {
  const deadline = Date.now() + (o.timeoutMs ?? 24 * 3600_000);
  for (;;) {
    o.signal?.throwIfAborted();
    const meta = await store.get(id);
    if (meta && FINAL_STATUSES.includes(meta.status)) return meta;
    if (meta) o.onProgress?.(meta);
    if (Date.now() > deadline) throw new CampaignWaitTimeout(`campaign ${id} did not end within the wait`);
    await sleep(o.pollMs ?? 200, o.signal);
  }
}
