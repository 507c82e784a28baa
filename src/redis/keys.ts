/**
 * Every Redis key of ours (BullMQ names its own, under `queuePrefix`) is built here, by scope: whose key it is
 * decides how it is named, so the layout lives in `join` and nothing else.
 *
 * The layout (issue 13, README decision "one hash tag per owner"): `<base>:<kind...>:{<owner>}[:<part>...]`, where
 * `<base>` is KEY_PREFIX without its braces. The owner (a tenant, a client, a Xero connection, a call campaign) is
 * the key's Redis Cluster hash tag, so one owner's keys share one slot (its scripts and MULTIs stay on one slot)
 * and different owners spread over the cluster's masters. Each queue has its own tag too (`queuePrefix`).
 * Until 0.x the layout was `<KEY_PREFIX>:<kind...>:<owner>[:<part>...]` (every key in the prefix's one slot):
 * `legacyKey` still names those, for `migrate-keys`. test/redis/keys.test.ts pins the strings of every store.
 */

import { createHash } from 'node:crypto';

export type KeyPart = string | number;

/** What a key holds: one word (`'ids'`) or a path of words (`['calls', 'ledger']`), written before its owner. */
export type KeyKind = string | readonly string[];

/** KEY_PREFIX without hash-tag braces: the tag of a key is its owner, never the prefix. */
export function keyBase(prefix: string): string {
  return prefix.replace(/[{}]/g, '');
}

const words = (kind: KeyKind): readonly string[] => (typeof kind === 'string' ? [kind] : kind);

/** The one place the layout lives. `owner` is undefined for a key of the whole deployment. */
function join(prefix: string, kind: KeyKind, owner: string | undefined, parts: readonly KeyPart[]): string {
  return [keyBase(prefix), ...words(kind), ...(owner === undefined ? [] : [`{${owner}}`]), ...parts].join(':');
}

/** The key the layout before issue 13 gave (owner, kind, parts): `<prefix>:<kind...>:<owner>[:<part>...]`. */
export function legacyKey(prefix: string, kind: KeyKind, owner: string | undefined, ...parts: KeyPart[]): string {
  return [prefix, ...words(kind), ...(owner === undefined ? [] : [owner]), ...parts].join(':');
}

/**
 * The BullMQ `prefix` of one queue: `<base>:{<queue>}`, so each queue is its own hash tag (bullmq #2589: a queue's
 * keys on one slot; no flow spans two queues here) and the queues spread over a cluster.
 */
export function queuePrefix(prefix: string, queue: string): string {
  return `${keyBase(prefix)}:{${queue}}`;
}

/** Tenant ids come validated from the tenants file; this guard keeps a stray value from reshaping a key. */
const SAFE_TENANT = /^[A-Za-z0-9_.-]{1,128}$/;

function assertTenant(tenant: string): void {
  if (!SAFE_TENANT.test(tenant)) {
    throw new Error(`invalid tenant id for a Redis key: ${JSON.stringify(tenant.slice(0, 80))} (letters, digits, _ . - only)`);
  }
}

/** A tenant's key (state, record mirror, flags, run lock, call ledger): `<base>:<kind>:{<tenant>}[:<part>...]`. */
export function tenantKey(prefix: string, tenant: string, kind: KeyKind, ...parts: KeyPart[]): string {
  assertTenant(tenant);
  return join(prefix, kind, tenant, parts);
}

/**
 * A client's key: the collections service's client (the token protocol) or a platform app (Xero's per-app
 * limit): `<base>:<kind>:{<client>}[:<part>...]`.
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

/** A SCAN pattern for every key of every client of one kind (`<base>:<kind>:*`; a cluster is scanned master by master). */
export function clientKeysPattern(prefix: string, kind: KeyKind): string {
  return `${join(prefix, kind, undefined, []).replace(/([*?[\]\\])/g, '\\$1')}:*`;
}

/** The client of a key made by `clientKey(prefix, client, kind, ...)`, or undefined for a key of another shape. */
export function clientOfKey(prefix: string, kind: KeyKind, key: string): string | undefined {
  const head = `${join(prefix, kind, undefined, [])}:`;
  if (!key.startsWith(head)) return undefined;
  const tag = /^\{([^{}:]+)\}(?::|$)/.exec(key.slice(head.length));
  return tag?.[1];
}

/** A platform connection's key (Xero: one organisation's tokens): `<base>:<kind>:{<connection>}[:<part>...]`. */
export function connectionKey(prefix: string, connection: string, kind: KeyKind, ...parts: KeyPart[]): string {
  return join(prefix, kind, connection, parts);
}

/** A call campaign's key: `<base>:<kind>:{<campaign>}[:<part>...]` (no script or MULTI joins it with its tenant's keys). */
export function campaignKey(prefix: string, campaign: string, kind: KeyKind, ...parts: KeyPart[]): string {
  return join(prefix, kind, campaign, parts);
}

/**
 * A key of one deployment-wide collection whose keys one script joins (the stored tenants' index and change log):
 * `<base>:<kind>:{<kind>}[:<part>...]`, every key of the collection on the slot of its kind's tag.
 */
export function collectionKey(prefix: string, kind: string, ...parts: KeyPart[]): string {
  return join(prefix, kind, kind, parts);
}

/**
 * A key of a deployment-wide log whose keys are written together (the run webhooks' event log, decision 0221):
 * `<base>:log:{<log>}[:<part>...]`, the log's name its hash tag, so its scripts stay on one slot.
 */
export function logKey(prefix: string, log: string, ...parts: KeyPart[]): string {
  return join(prefix, 'log', log, parts);
}

/** A key of the whole deployment (a connect state or grant): `<base>:<part>...` (a one-key owner: its own slot). */
export function globalKey(prefix: string, ...parts: KeyPart[]): string {
  return join(prefix, [], undefined, parts);
}

/** A SCAN pattern for every key under `prefix`, ours and BullMQ's (the demo's clean-up on a shared Redis). */
export function prefixPattern(prefix: string): string {
  return `${keyBase(prefix).replace(/([*?[\]\\])/g, '\\$1')}:*`;
}
