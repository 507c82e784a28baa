/**
 * The state room: Redis-backed id maps and content hashes, intents, cursors and checkpoints, dead letters,
 * pending invoices, the payment ledger, the record mirror, run history and the per-tenant run lock.
 * `createStateStores` builds them all over one connection and key prefix (a `{hash tag}`, so one tenant's keys
 * share a Cluster slot).
 */
import type { Redis } from 'ioredis';
import { CursorStore } from './cursors.js';
import { DeadLetterStore } from './dead-letters.js';
import { DeliveryStore } from './deliveries.js';
import { TenantFlags } from './flags.js';
import { IntentStore } from './intents.js';
import { PaymentLedger } from './payment-ledger.js';
import { PendingStore } from './pending.js';
import { RecordMirror } from './record-mirror.js';
import { RecordStateStore } from './record-state.js';
import { TenantRunLock } from './run-lock.js';
import { RunStore } from './runs.js';

export interface StateStores {
  records: RecordStateStore;
  intents: IntentStore;
  cursors: CursorStore;
  deadLetters: DeadLetterStore;
  pending: PendingStore;
  paymentLedger: PaymentLedger;
  runs: RunStore;
  runLock: TenantRunLock;
  /** The last run-webhook delivery attempt per tenant. */
  deliveries: DeliveryStore;
  /**
   * Deletes every state key of a tenant (id maps, hashes, intents, cursors, checkpoint, dead letters, pending,
   * payment ledger, record mirror, flags and, unless `keepRuns`, run history and the last webhook delivery), for `id-map rebuild`. Leaves the
   * run lock alone: the caller should hold it. Returns how many keys existed.
   */
  forgetTenant(tenant: string, options?: { keepRuns?: boolean }): Promise<number>;
}

export function createStateStores(redis: Redis, prefix: string): StateStores {
  const records = new RecordStateStore(redis, prefix);
  const intents = new IntentStore(redis, prefix);
  const cursors = new CursorStore(redis, prefix);
  const deadLetters = new DeadLetterStore(redis, prefix);
  const pending = new PendingStore(redis, prefix);
  const paymentLedger = new PaymentLedger(redis, prefix);
  const runs = new RunStore(redis, prefix);
  const runLock = new TenantRunLock(redis, prefix);
  const mirror = new RecordMirror(redis, prefix);
  const flags = new TenantFlags(redis, prefix);
  const deliveries = new DeliveryStore(redis, prefix);

  return {
    records,
    intents,
    cursors,
    deadLetters,
    pending,
    paymentLedger,
    runs,
    runLock,
    deliveries,
    async forgetTenant(tenant, options = {}) {
      const keys = [
        ...records.keysOf(tenant),
        ...intents.keysOf(tenant),
        ...cursors.keysOf(tenant),
        ...deadLetters.keysOf(tenant),
        ...pending.keysOf(tenant),
        ...paymentLedger.keysOf(tenant),
        ...(options.keepRuns ? [] : [...(await runs.keysOf(tenant)), ...deliveries.keysOf(tenant)]),
      ];
      const n = await redis.unlink(...keys);
      await Promise.all([mirror.clear(tenant), flags.clear(tenant)]);
      return n;
    },
  };
}

export { CursorStore, DeadLetterStore, DeliveryStore, IntentStore, PaymentLedger, PendingStore, RecordStateStore, RunStore, TenantRunLock };
export { StateCorruptError } from './stored.js';
export { stateKey } from './keys.js';
export type { RecordState, RecordStateEntry, RecordStateWrite } from './record-state.js';
export type { Intent, IntentEntry } from './intents.js';
export type { Checkpoint, CheckpointData, CursorState } from './cursors.js';
export type { DeadLetter, DeadLetterCounts, DeadLetterEntry, DeadLetterRef } from './dead-letters.js';
export type { PendingEntry } from './pending.js';
export type { PaymentLedgerEntry } from './payment-ledger.js';
export type { LastDelivery } from './deliveries.js';
export type { RunFinish, RunPatch, RunRecord, RunStart } from './runs.js';
export { RunWaitTimeout, waitForRun, type WaitOptions } from './run-wait.js';
