/**
 * The kinds of key the state room keeps, one tenant's each, named through `tenantKey` (src/redis/keys.ts, which
 * owns the layout and the tenant-id guard): `<prefix>:<kind>:<tenant>[:<part>...]`.
 */
import { tenantKey, type KeyKind, type KeyPart } from '../redis/keys.js';

export const STATE_KINDS = {
  /** Packed records (id map, mirror cells, ledger entry in one value, in buckets): one HASH per (tenant, entity). */
  rec: 'rec',
  /** Id map and content hash as versions before packed records kept them (packed by migrate-keys, src/state/old-hashes.ts; never read by the worker). */
  ids: 'ids',
  intents: 'intents',
  cursors: 'cursors',
  checkpoint: 'checkpoint',
  dead: 'dead',
  pending: 'pending',
  /** The payment ledger: `ledger:<t>:pay` and `ledger:<t>:inv`. */
  paymentLedger: 'ledger',
  runs: 'runs',
  /** The per-tenant run lock: `<prefix>:lock:run:<tenant>`. */
  lock: ['lock', 'run'],
  /** The record mirror (a durable copy the calls read, not a cache): one HASH per (tenant, entity). */
  mirror: 'cache',
  flags: 'flags',
  /** The last run-webhook delivery attempt: `notify:<t>`. */
  deliveries: 'notify',
  /** A tenant created over the API (src/state/tenant-store.ts): its document, secrets sealed. */
  tenant: 'tenant',
} as const satisfies Record<string, KeyKind>;
export type StateKind = keyof typeof STATE_KINDS;

/** A state key of `tenant`. */
export function stateKey(prefix: string, kind: StateKind, tenant: string, ...parts: KeyPart[]): string {
  return tenantKey(prefix, tenant, STATE_KINDS[kind], ...parts);
}
