/**
 * Key layout of the state room. Every key is `<prefix>:<kind>:<tenant>[:<part>...]`, built with the shared
 * `key()` helper, so a tenant's keys share the prefix's `{hash tag}` (one Redis Cluster slot: multi-key Lua
 * over one tenant's keys is safe).
 */
import { key } from '../queues/names.js';

export const STATE_KINDS = {
  /** Id map and content hash: one HASH per (tenant, entity). */
  ids: 'ids',
  intents: 'intents',
  cursors: 'cursors',
  checkpoint: 'checkpoint',
  dead: 'dead',
  pending: 'pending',
  ledger: 'ledger',
  runs: 'runs',
  lock: 'lock',
} as const;
export type StateKind = (typeof STATE_KINDS)[keyof typeof STATE_KINDS];

/** Tenant ids come validated from the tenants file; this guard keeps a stray value from reshaping a key. */
const SAFE_TENANT = /^[A-Za-z0-9_.-]{1,128}$/;

export function assertTenant(tenant: string): void {
  if (!SAFE_TENANT.test(tenant)) {
    throw new Error(`invalid tenant id for a state key: ${JSON.stringify(tenant.slice(0, 80))} (letters, digits, _ . - only)`);
  }
}

/** `<prefix>:<kind>:<tenant>[:<part>...]`. */
export function stateKey(prefix: string, kind: StateKind, tenant: string, ...parts: (string | number)[]): string {
  assertTenant(tenant);
  return key(prefix, kind, tenant, ...parts);
}
