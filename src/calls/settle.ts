/**
 * Settling a call from what the service tells us about it (a webhook's `requestMetadata`, which echoes the
 * bulk-call contact's `metadata` we wrote: tenant, campaign id, and the contact's uuid or, for a list, its number).
 *
 * A call the service reports happened:
 *   entry `unknown` (its request's answer was lost)      -> `confirmed`: the number stays refused for the cooldown
 *                                                           from now, and leaves the tenant's unknown outcomes
 *   entry `planned` in a request still `sending`         -> `called` (under the campaign's lock: a running campaign
 *   (the campaign stopped while sending)                    is waited for, then the request's re-run keeps it)
 *   anything else                                        -> unchanged (already called or confirmed, released by an
 *                                                           operator, never sent, ...)
 * Nothing is ever sent from here.
 */
import type { RedisLock } from '../redis/lock.js';
import type { CallLedger } from './call-ledger.js';
import type { CampaignStore } from './campaign-store.js';
import { campaignIdSchema, type EntryRecord } from './types.js';

export type Settlement =
  | { outcome: 'settled'; campaignId: string; number: string; from: 'unknown' | 'sending' }
  | { outcome: 'unchanged'; campaignId: string; number: string; detail: string }
  | { outcome: 'unmatched'; detail: string }
  /** The campaign is running (its lock is held): try again shortly. */
  | { outcome: 'busy'; campaignId: string };

export interface SettleDeps {
  store: CampaignStore;
  callLedger: CallLedger;
  /** The campaign's lock (the one its job holds while it runs). */
  lock(campaignId: string): RedisLock;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

/** The entry the metadata names: by number (lists), else by contact uuid (overdue campaigns). */
async function entryOf(store: CampaignStore, campaignId: string, meta: Record<string, unknown>): Promise<EntryRecord | undefined> {
  const number = str(meta['number']);
  if (number !== undefined) return (await store.entries(campaignId, [number]))[0];
  const contactUuid = str(meta['contactUuid'])?.toLowerCase();
  if (contactUuid === undefined) return undefined;
  return (await store.entries(campaignId)).find((e) => e.contactUuid?.toLowerCase() === contactUuid);
}

export async function settleCall(deps: SettleDeps, tenant: string, meta: Record<string, unknown> | undefined, reason: string, now = Date.now()): Promise<Settlement> {
  if (!meta) return { outcome: 'unmatched', detail: 'no requestMetadata' };
  const campaignId = str(meta['campaignId']);
  if (campaignId === undefined || !campaignIdSchema.safeParse(campaignId).success) return { outcome: 'unmatched', detail: 'requestMetadata names no campaign of ours' };
  const metaTenant = str(meta['tenant']);
  if (metaTenant !== undefined && metaTenant !== tenant) return { outcome: 'unmatched', detail: `requestMetadata names tenant ${metaTenant}, not ${tenant}` };
  const { store, callLedger } = deps;
  const campaign = await store.get(campaignId);
  if (!campaign || campaign.tenant !== tenant) return { outcome: 'unmatched', detail: `no campaign ${campaignId} of tenant ${tenant}` };
  const entry = await entryOf(store, campaignId, meta);
  if (!entry) return { outcome: 'unmatched', detail: `campaign ${campaignId} has no call for this contact (requestMetadata has no known number or contactUuid)` };
  const number = entry.number;

  if (entry.state === 'unknown') {
    await callLedger.confirm(tenant, campaignId, [number], now);
    await store.putEntries(campaignId, [{ ...entry, state: 'confirmed', reason, at: now }]);
    await store.removeUnknown(tenant, campaignId, [number]);
    return { outcome: 'settled', campaignId, number, from: 'unknown' };
  }
  if (entry.state === 'planned') {
    const request = await store.request(campaignId, entry.request);
    if (request?.state !== 'sending') return { outcome: 'unchanged', campaignId, number, detail: 'the call was not sent' };
    const lock = deps.lock(campaignId);
    if (!(await lock.acquire())) return { outcome: 'busy', campaignId };
    try {
      // Read again under the lock: a campaign job may have closed the request meanwhile.
      const [again] = await store.entries(campaignId, [number]);
      const rec = await store.request(campaignId, entry.request);
      if (again?.state !== 'planned' || rec?.state !== 'sending') return settleCall(deps, tenant, meta, reason, now);
      await callLedger.called(tenant, campaignId, rec.index, [number], now);
      await store.putEntries(campaignId, [{ ...again, state: 'called', reason, at: now }]);
      return { outcome: 'settled', campaignId, number, from: 'sending' };
    } finally {
      await lock.release();
    }
  }
  return { outcome: 'unchanged', campaignId, number, detail: `the call is already ${entry.state}` };
}
