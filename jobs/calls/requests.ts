/**
 * The requests of one campaign, run in order by the holder of the campaign's lock:
 *
 *   reserve the numbers in the call ledger -> write the request as `sending` -> send -> sent | unknown | failed
 *
 * A request found in `sending` (the run before stopped while sending) may have gone out: it becomes `unknown`
 * and is never sent again. An ambiguous failure is `unknown` too; a definite one releases the numbers; one that
 * certainly did not reach the service puts the request back to `planned` and throws NotSent, for the job to
 * try again later. The cancel flag is read before every request.
 */
import {
  callUuids,
  describeHold,
  requestBody,
  type CallLedger,
  type CallSettings,
  type CampaignStore,
  type EntryRecord,
  type CallLedgerHold,
  type RequestRecord,
} from '../../src/calls/index.js';
import type { CallResult, CollectionsClient } from '../../src/collections/client.js';
import { AbortedError, AmbiguousError, AuthError, CollectionsError, RateLimitedError, TransientError, ValidationError } from '../../src/collections/errors.js';
import type { Logger } from '../../src/logger.js';

/** What a failed call request means: `unknown` (may have happened), `failed` (did not), `retry` (did not; try later). */
export type Verdict = { kind: 'unknown' | 'failed' | 'retry'; code: string; message: string };

/** What a failed call request means for the numbers in it. */
export function verdictOf(err: unknown): Verdict {
  if (!(err instanceof CollectionsError)) return { kind: 'unknown', code: 'UNKNOWN', message: err instanceof Error ? err.message : String(err) };
  const base = { code: err.code, message: err.message };
  if (err instanceof AmbiguousError || err instanceof AbortedError) return { kind: 'unknown', ...base };
  if (err instanceof TransientError || err instanceof RateLimitedError) return { kind: 'retry', ...base };
  if (err instanceof AuthError) return { kind: err.retryable ? 'retry' : 'failed', ...base };
  if (err instanceof ValidationError && err.detail.length > 0) {
    return { kind: 'failed', ...base, message: `${err.message} [${err.detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ')}]` };
  }
  return { kind: 'failed', ...base };
}

/** Thrown when a request certainly did not reach the service and may be tried again by a later attempt. */
export class NotSent extends Error {
  constructor(
    readonly original: unknown,
    message: string,
  ) {
    super(message, { cause: original });
    this.name = 'NotSent';
  }
}

/** What happened to one call request (snake_cased as a metric label). */
export type CallRequestOutcome = 'sent' | 'unknown' | 'failed' | 'notSent' | 'skipped' | 'cancelled';

/** The hook the worker turns into metrics: each request's outcome, and how many numbers a sent one placed. */
export interface CallMetrics {
  request(tenant: string, outcome: CallRequestOutcome, numbersPlaced: number): void;
}

export interface RunDeps {
  store: CampaignStore;
  callLedger: CallLedger;
  /** The two call endpoints of the collections client. */
  client: Pick<CollectionsClient, 'bulkCall' | 'call'>;
  tenant: string;
  id: string;
  settings: CallSettings;
  owner: string;
  log: Logger;
  metrics?: CallMetrics;
}

/** The requests of one campaign, run in order by the lock holder. */
export class CampaignRun {
  constructor(private readonly d: RunDeps) {}

  private count(outcome: CallRequestOutcome, numbersPlaced = 0): void {
    this.d.metrics?.request(this.d.tenant, outcome, numbersPlaced);
  }

  /** Runs every request still to run; `shouldStop` is asked before each (true: stop for a shutdown). */
  async all(o: { shouldStop: () => boolean }): Promise<'done' | 'cancelled' | 'stopped'> {
    const requests = await this.d.store.requests(this.d.id);
    for (const [i, rec] of requests.entries()) {
      if (rec.state === 'sending') await this.recover(rec);
      if (rec.state !== 'planned') continue;
      if (await this.d.store.isCancelled(this.d.id)) {
        await this.close(requests.slice(i), 'cancelled', 'the campaign was cancelled before this request');
        return 'cancelled';
      }
      if (o.shouldStop()) return 'stopped';
      await this.send(rec);
    }
    return 'done';
  }

  /** The last attempt failed: every request still planned fails and its reservations are freed. */
  async failRest(reason: string): Promise<void> {
    await this.close(await this.d.store.requests(this.d.id), 'failed', reason);
  }

  private async close(requests: RequestRecord[], state: 'cancelled' | 'failed', reason: string): Promise<void> {
    const now = Date.now();
    for (const rec of requests) {
      if (rec.state !== 'planned') continue;
      if (!(await this.d.store.transition(this.d.id, 'planned', { ...rec, state, updatedAt: now, ...(state === 'failed' ? { error: { code: 'CALLS_GAVE_UP', message: reason } } : {}) }))) continue;
      const entries = (await this.entriesOf(rec)).filter((e) => e.state === 'planned');
      await this.d.callLedger.release(this.d.tenant, this.d.id, rec.index, entries.map((e) => e.number));
      await this.d.store.putEntries(this.d.id, entries.map((e) => ({ ...e, state, reason, at: now })));
      this.count(state);
    }
  }

  private async entriesOf(rec: RequestRecord): Promise<EntryRecord[]> {
    if (rec.contacts) return this.d.store.entries(this.d.id, rec.contacts.map((c) => c.numberToCall));
    return (await this.d.store.entries(this.d.id)).filter((e) => e.request === rec.index);
  }

  /** A request left in `sending` by an earlier run: it may have gone out, so it is never sent again. */
  private async recover(rec: RequestRecord): Promise<void> {
    const sent = rec.sent ?? [];
    const entries = await this.d.store.entries(this.d.id, sent);
    const open = entries.filter((e) => e.state === 'planned');
    const now = Date.now();
    if (open.length === 0 && entries.some((e) => e.state === 'called')) {
      // The earlier run recorded the answer but stopped before closing the request.
      await this.d.callLedger.called(this.d.tenant, this.d.id, rec.index, sent);
      await this.d.store.putRequest(this.d.id, { ...rec, state: 'sent', updatedAt: now });
      this.count('sent', sent.length);
      rec.state = 'sent';
      return;
    }
    const reason = 'the campaign stopped while this request was being sent: it may have gone out';
    await this.unknown(rec, open.map((e) => e.number), open, { code: 'CALLS_INTERRUPTED', message: reason }, now);
    rec.state = 'unknown';
  }

  private async send(rec: RequestRecord): Promise<void> {
    const { store, callLedger, tenant, id, log } = this.d;
    const entries = (await this.entriesOf(rec)).filter((e) => e.state === 'planned');
    const reserved = await callLedger.reserve(tenant, id, rec.index, entries.map((e) => e.number));
    const now = Date.now();
    const refused = new Map<string, CallLedgerHold | undefined>();
    for (const r of reserved) if (!r.ok) refused.set(r.number, r.holder);
    if (refused.size > 0) {
      const held = entries.filter((e) => refused.has(e.number));
      await store.putEntries(id, held.map((e) => ({ ...e, state: 'cooldown' as const, reason: describeHold(refused.get(e.number)), at: now })));
      log.info({ request: rec.index, refused: refused.size }, 'numbers called recently (or being called) left out');
    }
    const going = entries.filter((e) => !refused.has(e.number));
    const numbers = going.map((e) => e.number);
    if (going.length === 0) {
      await store.transition(id, 'planned', { ...rec, state: 'skipped', sent: [], updatedAt: now });
      this.count('skipped');
      return;
    }
    let body: { kind: 'bulk'; value: Parameters<CollectionsClient['bulkCall']>[0] } | { kind: 'single'; value: { contactUuid: string } };
    if (rec.contactUuid !== undefined) body = { kind: 'single', value: { contactUuid: rec.contactUuid } };
    else {
      const keep = new Set(numbers);
      const checked = requestBody((rec.contacts ?? []).filter((c) => keep.has(c.numberToCall)), this.d.settings);
      if (!checked.ok) {
        await this.failed(rec, numbers, going, { code: 'COLLECTIONS_REJECTED', message: `refused locally: ${checked.problem}` }, now);
        return;
      }
      body = { kind: 'bulk', value: checked.body };
    }
    const sending: RequestRecord = { ...rec, state: 'sending', sent: numbers, owner: this.d.owner, updatedAt: now };
    if (!(await store.transition(id, 'planned', sending))) return;

    let result: CallResult;
    try {
      result = body.kind === 'bulk' ? await this.d.client.bulkCall(body.value) : await this.d.client.call(body.value);
    } catch (err) {
      const v = verdictOf(err);
      const at = Date.now();
      if (v.kind === 'retry') {
        await store.transition(id, 'sending', { ...rec, state: 'planned', updatedAt: at });
        this.count('notSent');
        throw new NotSent(err, v.message);
      }
      if (v.kind === 'unknown') {
        log.warn({ request: rec.index, numbers: numbers.length, code: v.code }, 'call request outcome unknown: marked for an operator, never retried');
        await this.unknown(sending, numbers, going, v, at);
      } else {
        log.warn({ request: rec.index, numbers: numbers.length, code: v.code, err: v.message }, 'call request failed: numbers released');
        await this.failed(sending, numbers, going, v, at);
      }
      return;
    }
    const at = Date.now();
    const uuids = callUuids(result, numbers);
    await store.putEntries(id, going.map((e) => {
      const callUuid = uuids.get(e.number);
      return { ...e, state: 'called' as const, at, ...(callUuid !== undefined ? { callUuid } : {}) };
    }));
    await callLedger.called(tenant, id, rec.index, numbers, at);
    await store.putRequest(id, { ...sending, state: 'sent', updatedAt: at });
    this.count('sent', numbers.length);
    log.info({ request: rec.index, numbers: numbers.length, status: result.status }, 'call request sent');
  }

  private async unknown(rec: RequestRecord, numbers: string[], entries: EntryRecord[], v: { code: string; message: string }, at: number): Promise<void> {
    await this.d.callLedger.unknown(this.d.tenant, this.d.id, rec.index, numbers, at);
    await this.d.store.putEntries(this.d.id, entries.map((e) => ({ ...e, state: 'unknown' as const, reason: v.message, at })));
    await this.d.store.addUnknown(this.d.tenant, this.d.id, numbers);
    await this.d.store.putRequest(this.d.id, { ...rec, state: 'unknown', error: { code: v.code, message: v.message }, updatedAt: at });
    this.count('unknown');
  }

  private async failed(rec: RequestRecord, numbers: string[], entries: EntryRecord[], v: { code: string; message: string }, at: number): Promise<void> {
    await this.d.callLedger.release(this.d.tenant, this.d.id, rec.index, numbers);
    await this.d.store.putEntries(this.d.id, entries.map((e) => ({ ...e, state: 'failed' as const, reason: v.message, at })));
    await this.d.store.putRequest(this.d.id, { ...rec, state: 'failed', error: { code: v.code, message: v.message }, updatedAt: at });
    this.count('failed');
  }
}
