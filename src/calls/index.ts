/**
 * AI collection calls: selection, phone numbers, plans and requests (pure), the call ledger and campaigns (stored).
 * The worker's steps that drive them (planning against the service, sending requests) are jobs/calls.
 */
import type { Redis } from 'ioredis';
import { CampaignStore } from './campaign-store.js';
import { CallLedger } from './call-ledger.js';

export * from './types.js';
export { normalisePhone, type PhoneCheck } from './phone.js';
export { outstandingOf, overdueInvoice, targetFor, rankAndDedupe, type TargetContext, type TargetVerdict } from './select.js';
export { selectOverdue, type Selection } from './source.js';
export { amountDue, formatAmount, overdueTags, type DueInvoice } from './tags.js';
export { parseCallList, listFormatOf, type ParsedList, type RowError, type ListContext } from './list-file.js';
export { readCsv, detectDelimiter, parseDelimiter, DELIMITERS, type Delimiter, type CsvRead, type CsvRecord, type CsvProblem } from './csv.js';
export { resolveSettings, requestBody, planRequests, plannedRecords, singleCallRecords, chunk, PlanError, DEFAULT_CURRENCY, type TenantCallDefaults, type SettingsCheck, type BodyCheck, type PlannedRecords, type ServiceContact } from './plan.js';
export { callUuids } from './answers.js';
export { CallLedger, describeHold, holdSchema, type CallLedgerHold, type CallLedgerOptions, type ReserveResult } from './call-ledger.js';
export { CampaignStore, ENTRY_STATES, type StoredPlan } from './campaign-store.js';
export { formatReport, exitCodeOfReport } from './report.js';
export { resolveUnknown, waitForCampaign, OperatorError, CampaignWaitTimeout, type Resolution } from './operator.js';

export interface CallStores {
  store: CampaignStore;
  callLedger: CallLedger;
}

/** The campaign store and call ledger over one connection and key prefix (the worker and the CLI share the keys). */
export function createCallStores(redis: Redis, prefix: string, options: { cooldownMs: number; retentionMs?: number }): CallStores {
  return {
    store: new CampaignStore(redis, prefix, options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    callLedger: new CallLedger(redis, prefix, { cooldownMs: options.cooldownMs }),
  };
}
