/**
 * Every Redis key of ours (BullMQ names its own) is built here, by scope: whose key it is decides how it is
 * named, so a new layout (a hash tag per tenant, per client: issue 13) changes `join` and nothing else.
 *
 * Today every key is `<prefix>:<kind...>:<owner>[:<part>...]` under the one KEY_PREFIX (a `{hash tag}`, so all
 * keys share one Cluster slot). test/redis/keys.test.ts pins the strings of every store.
 */

import { createHash } from 'node:crypto';

export type KeyPart = string | number;

/** What a key holds: one word (`'ids'`) or a path of words (`['calls', 'ledger']`), written before its owner. */
export type KeyKind = string | readonly string[];

/** The one place the layout lives. `owner` is undefined for a key of the whole deployment. */
function join(prefix: string, kind: KeyKind, owner: string | undefined, parts: readonly KeyPart[]): string {
  return [prefix, ...(typeof kind === 'string' ? [kind] : kind), ...(owner === undefined ? [] : [owner]), ...parts].join(':');
}

/** Tenant ids come validated from the tenants file; this guard keeps a stray value from reshaping a key. */
const SAFE_TENANT = /^[A-Za-z0-9_.-]{1,128}$/;

function assertTenant(tenant: string): void {
  if (!SAFE_TENANT.test(tenant)) {
    throw new Error(`invalid tenant id for a Redis key: ${JSON.stringify(tenant.slice(0, 80))} (letters, digits, _ . - only)`);
  }
}

/** A tenant's key (state, record mirror, flags, run lock, call ledger): `<prefix>:<kind>:<tenant>[:<part>...]`. */
export function tenantKey(prefix: string, tenant: string, kind: KeyKind, ...parts: KeyPart[]): string {
  assertTenant(tenant);
  return join(prefix, kind, tenant, parts);
}

/**
 * A client's key: the collections service's client (the token protocol) or a platform app (Xero's per-app
 * limit): `<prefix>:<kind>:<client>[:<part>...]`.
 */
export function clientKey(prefix: string, client: string, kind: KeyKind, ...parts: KeyPart[]): string {
  return join(prefix, kind, client, parts);
}

/**
 * The owner id of a client known by several parts (the token protocol: the auth URL and the client id, so two
 * services' clients with one id never share a key): a hex digest of the parts, each length-prefixed, so distinct
 * part lists give distinct ids and no part can reshape a key (no `:`, no hash-tag braces).
 */
export function clientDigest(...parts: string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(`${Buffer.byteLength(p)}:`).update(p);
  return h.digest('hex').slice(0, 32);
}

/** A SCAN pattern for every key of every client of one kind (`<prefix>:<kind>:*`). */
export function clientKeysPattern(prefix: string, kind: KeyKind): string {
  return `${join(prefix, kind, undefined, []).replace(/([*?[\]\\])/g, '\\$1')}:*`;
}

/** The client of a key made by `clientKey(prefix, client, kind, ...)`, or undefined for a key of another shape. */
export function clientOfKey(prefix: string, kind: KeyKind, key: string): string | undefined {
  const head = `${join(prefix, kind, undefined, [])}:`;
  if (!key.startsWith(head)) return undefined;
  const client = key.slice(head.length).split(':')[0];
  return client === undefined || client === '' ? undefined : client;
}

/** A platform connection's key (Xero: one organisation's tokens and limits): `<prefix>:<kind>:<connection>[:<part>...]`. */
export function connectionKey(prefix: string, connection: string, kind: KeyKind, ...parts: KeyPart[]): string {
  return join(prefix, kind, connection, parts);
}

/** A call campaign's key: `<prefix>:<kind>:<campaign>[:<part>...]`. */
export function campaignKey(prefix: string, campaign: string, kind: KeyKind, ...parts: KeyPart[]): string {
  return join(prefix, kind, campaign, parts);
}

/** A key of the whole deployment (the schedules lock): `<prefix>:<part>...`. */
export function globalKey(prefix: string, ...parts: KeyPart[]): string {
  return join(prefix, [], undefined, parts);
}

/** A SCAN pattern for every key under `prefix`, ours and BullMQ's (the demo's clean-up on a shared Redis). */
export function prefixPattern(prefix: string): string {
  return `${prefix.replace(/([*?[\]\\])/g, '\\$1')}:*`;
}
