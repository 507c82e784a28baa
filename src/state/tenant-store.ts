/**
 * Tenants created over the control API (issue "Tenants as data"): each one a document in Redis beside the rest of
 * its state (`<base>:tenant:{<id>}`, a HASH whose field `doc` holds it), and one index of their ids for the whole
 * deployment (`<base>:tenants`, a sorted set read in id order). The document is the tenants file's entry as it was
 * sent (defaults not filled in, so a JSON merge patch applies to what the caller wrote), with every field the schema
 * makes a `Secret` taken out and sealed under PLATFORM_TOKEN_KEY (the app's token cipher), each bound to this key and
 * its field: a secret is never in Redis in plain text, and a sealed one copied elsewhere does not open.
 *
 * Every process keeps the documents it last read, parsed, so the app's tenant lookup stays synchronous; a write here
 * updates this process's copy at once. Every write files its change in a log (`<base>:tenants:{tenants}:*`: an index
 * of ids by the sequence of their last change, the removed ids the same way, one counter), so another process reads
 * only what changed since it last looked (`sync`: one round trip when nothing did), and one that was down catches up.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { canonicalJson } from '../canonical-json.js';
import { tenantSchema, type TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { collectionKey } from '../redis/keys.js';
import { Secret } from '../secret.js';
import { CHECK_AND_SET } from './cursors.js';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';

const FIELD = 'doc';
/** Removed ids kept in the change log; a reader further behind than the oldest reads every document again. */
const REMOVED_KEPT = 10_000;
const ANNOUNCE = stateScript('state/lua/tenants-announce');
/** Concurrent writers of one document retry their check-and-set this many times before giving up. */
const CAS_TRIES = 8;

/** A JSON object as sent (the entry of a tenants file). */
export type JsonObject = Record<string, unknown>;

export interface StoredTenant {
  config: TenantConfig;
  /** The document as sent, without its secrets (what GET shows and what a merge patch applies to). */
  settings: JsonObject;
  /** The dotted paths of the secrets set (`collections.clientSecret`). */
  secrets: string[];
  /** A strong entity tag of this version of the document. */
  etag: string;
  createdAt: number;
  updatedAt: number;
}

/** What a document holds in Redis. */
interface Doc {
  settings: JsonObject;
  /** Sealed secrets by dotted path. */
  sealed: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

export interface Issue {
  path: (string | number)[];
  message: string;
}

export type PatchResult =
  | { kind: 'patched'; tenant: StoredTenant }
  | { kind: 'missing' }
  | { kind: 'stale' }
  | { kind: 'invalid'; issues: Issue[] };

/** The paths of every Secret in a parsed tenant (the fields the schema makes secrets). */
export function secretPaths(value: unknown, path: string[] = []): string[][] {
  if (value instanceof Secret) return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => secretPaths(v, [...path, String(i)]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => secretPaths(v, [...path, k]));
  return [];
}

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Sets an own property (a key `__proto__` in a body must stay a key, never reach the prototype). */
function setOwn(o: JsonObject, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** A deep copy of JSON data with own properties only. */
function copy(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copy);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) setOwn(out, k, copy(x));
  return out;
}

/** RFC 7396: `null` removes a member, an object merges into an object, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return copy(patch);
  const out: JsonObject = isObject(target) ? (copy(target) as JsonObject) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setOwn(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function getAt(o: unknown, path: readonly string[]): unknown {
  let node = o;
  for (const k of path) node = isObject(node) || Array.isArray(node) ? (node as JsonObject)[k] : undefined;
  return node;
}

function setAt(o: JsonObject, path: readonly string[], v: unknown): void {
  let node: JsonObject = o;
  for (const k of path.slice(0, -1)) {
    if (!isObject(node[k]) && !Array.isArray(node[k])) setOwn(node, k, {});
    node = node[k] as JsonObject;
  }
  setOwn(node, path[path.length - 1] ?? '', v);
}

function deleteAt(o: JsonObject, path: readonly string[]): void {
  const parent = getAt(o, path.slice(0, -1));
  if (isObject(parent) || Array.isArray(parent)) delete (parent as JsonObject)[path[path.length - 1] ?? ''];
}

const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

const etagOf = (doc: string): string => `"${createHash('sha256').update(doc).digest('base64url').slice(0, 22)}"`;

/** A parsed tenant's entry as JSON without its secrets, and the paths of those set (a file tenant's view). */
export function publicSettings(config: TenantConfig): { settings: JsonObject; secrets: string[] } {
  const paths = secretPaths(config);
  const settings = JSON.parse(JSON.stringify(config)) as JsonObject;
  for (const p of paths) deleteAt(settings, p);
  return { settings, secrets: paths.map((p) => p.join('.')).sort() };
}

/** The entity tag of settings no document holds (a file tenant's): of their JSON and the secrets set. */
export const settingsTag = (settings: JsonObject, secrets: readonly string[]): string => etagOf(JSON.stringify({ settings, secrets }));

/** What seals the secrets: the app's token cipher of PLATFORM_TOKEN_KEY (src/platforms/oauth/cipher.ts). */
export interface SecretBox {
  encrypt(plain: string, context: string): string;
  decrypt(box: string, context: string): string;
}

export class TenantStore {
  readonly #cache = new Map<string, { doc: string; tenant: StoredTenant }>();
  #seen: number | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** The token cipher of PLATFORM_TOKEN_KEY; without it nothing can be created and stored documents cannot be read. */
    private readonly box: SecretBox | undefined,
    private readonly o: { logger?: Logger; onChange?: (id: string) => void; /** Removed ids kept in the log (tests). */ removedKept?: number } = {},
  ) {}

  key(id: string): string {
    return stateKey(this.prefix, 'tenant', id);
  }

  /** The index, the change counter, the removed ids, their floor and removal times: one slot, so one script files a change. */
  #logKeys(): [string, string, string, string, string] {
    return ['index', 'seq', 'removed', 'floor', 'removed-at'].map((part) => collectionKey(this.prefix, 'tenants', part)) as [string, string, string, string, string];
  }

  indexKey(): string {
    return this.#logKeys()[0];
  }

  get sealing(): boolean {
    return this.box !== undefined;
  }

  /** The stored tenant of this id, as last read by this process. */
  get(id: string): StoredTenant | undefined {
    return this.#cache.get(id)?.tenant;
  }

  /** Every stored tenant, as last read by this process, by id. */
  list(): StoredTenant[] {
    return [...this.#cache.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e.tenant);
  }

  /** The change sequence this process has read up to (undefined before its first read). */
  get seen(): number | undefined {
    return this.#seen;
  }

  /** Reads every stored document again (those unchanged since the last read are not parsed again): the ids changed. */
  async refresh(): Promise<string[]> {
    const [index, seqKey] = this.#logKeys();
    const seq = Number((await this.redis.get(seqKey)) ?? 0);
    const ids = await this.redis.zrangebyscore(index, '-inf', seq);
    const changed = await this.#reload(ids, new Set(this.#cache.keys()));
    this.#seen = seq;
    return changed;
  }

  /**
   * Applies the changes filed since the last read (one round trip when there are none): the ids whose tenant was
   * created, changed or removed. Reads everything again when the removals it missed were trimmed from the log.
   */
  async sync(): Promise<string[]> {
    const [index, seqKey, removedKey, floorKey] = this.#logKeys();
    const [seqText, floorText] = await this.redis.mget(seqKey, floorKey);
    const seq = Number(seqText ?? 0);
    const seen = this.#seen;
    if (seen === undefined || Number(floorText ?? 0) > seen || seq < seen) return this.refresh();
    if (seq === seen) return [];
    const [put, removed] = await Promise.all([this.redis.zrangebyscore(index, `(${seen}`, seq), this.redis.zrangebyscore(removedKey, `(${seen}`, seq)]);
    const changed = await this.#reload(put, new Set(removed.filter((id) => !put.includes(id))));
    this.#seen = seq;
    return changed;
  }

  /** Reads the documents of `ids` (a missing one counts as removed) and drops `gone` not among them: the ids changed. */
  async #reload(ids: readonly string[], gone: Set<string>): Promise<string[]> {
    // One HGET per tenant (each on its own slot: no multi-key command across a cluster), sent together.
    const docs = await Promise.all(ids.map((id) => this.redis.hget(this.key(id), FIELD)));
    const changed: string[] = [];
    ids.forEach((id, i) => {
      const doc = docs[i];
      if (doc === null || doc === undefined) {
        gone.add(id);
        return;
      }
      gone.delete(id);
      if (this.#cache.get(id)?.doc === doc) return;
      try {
        this.#remember(id, doc);
        changed.push(id);
      } catch (err) {
        this.o.logger?.warn({ tenant: id, err: (err as Error).message }, 'stored tenant not loaded');
        if (this.#cache.delete(id)) {
          this.o.onChange?.(id);
          changed.push(id);
        }
      }
    });
    for (const id of gone) {
      if (!this.#cache.delete(id)) continue;
      this.o.onChange?.(id);
      changed.push(id);
    }
    return changed;
  }

  /** Files a change of `id` in the log (after its document is written or gone). */
  async #announce(id: string, op: 'put' | 'del'): Promise<number> {
    return Number(await ANNOUNCE.run(this.redis, this.#logKeys(), [id, op, String(this.o.removedKept ?? REMOVED_KEPT), String(Date.now())]));
  }

  /** The ids removed before `before` (epoch ms) whose state has not been purged, and when each was removed. */
  async removedBefore(before: number): Promise<{ id: string; at: number }[]> {
    const all = await this.redis.hgetall(this.#logKeys()[4]);
    return Object.entries(all)
      .map(([id, at]) => ({ id, at: Number(at) }))
      .filter((r) => r.at < before)
      .sort((a, b) => a.at - b.at);
  }

  /** Forgets a removal once its state is purged (a removal filed since, under the same id, is kept). */
  async purged(id: string, at: number): Promise<void> {
    const key = this.#logKeys()[4];
    if (Number(await this.redis.hget(key, id)) === at) await this.redis.hdel(key, id);
  }

  /**
   * Stores a new tenant from its entry (already valid under the tenants file's schema); `exists` when the id is taken
   * in the store (the caller checks the file).
   */
  async create(entry: JsonObject, now = Date.now()): Promise<{ kind: 'created'; tenant: StoredTenant } | { kind: 'exists' }> {
    const config = tenantSchema.parse(entry);
    const doc = this.#seal(config.id, entry, config, now, now);
    // The document first, then the change filed: a reader that sees the change finds the document.
    if ((await CHECK_AND_SET.run(this.redis, [this.key(config.id)], [FIELD, '', doc])) !== 1) {
      // A create that stopped between the two left a document no reader was told of: it is filed now, and taken.
      if ((await this.redis.zscore(this.indexKey(), config.id)) === null) await this.#announce(config.id, 'put');
      return { kind: 'exists' };
    }
    await this.#announce(config.id, 'put');
    return { kind: 'created', tenant: this.#remember(config.id, doc) };
  }

  /**
   * Applies a JSON merge patch to the document; `ifMatch` (an entity tag) must name the version read, else `stale`.
   * `check` adds what the schema alone cannot say (settings of this deployment, identities shared with others).
   */
  async patch(id: string, patch: JsonObject, o: { ifMatch?: string; check?: (config: TenantConfig, entry: JsonObject) => Issue[] | Promise<Issue[]>; now?: number } = {}): Promise<PatchResult> {
    for (let i = 0; i < CAS_TRIES; i += 1) {
      const doc = await this.redis.hget(this.key(id), FIELD);
      if (doc === null) return { kind: 'missing' };
      if (o.ifMatch !== undefined && !matches(o.ifMatch, etagOf(doc))) return { kind: 'stale' };
      const current = this.#open(id, doc);
      const entry = mergePatch(current.entry, patch) as JsonObject;
      if (entry['id'] !== id) return { kind: 'invalid', issues: [{ path: ['id'], message: `the id of a tenant does not change (it names its state); delete it and create ${String(entry['id'])}` }] };
      const parsed = tenantSchema.safeParse(entry);
      if (!parsed.success) return { kind: 'invalid', issues: parsed.error.issues.map((x) => ({ path: x.path.map((p) => (typeof p === 'number' ? p : String(p))), message: x.message })) };
      const issues = (await o.check?.(parsed.data, entry)) ?? [];
      if (issues.length > 0) return { kind: 'invalid', issues };
      const next = this.#seal(id, entry, parsed.data, current.createdAt, o.now ?? Date.now());
      if ((await CHECK_AND_SET.run(this.redis, [this.key(id)], [FIELD, doc, next])) === 1) {
        await this.#announce(id, 'put');
        return { kind: 'patched', tenant: this.#remember(id, next) };
      }
    }
    throw new Error(`tenant ${id}: too many concurrent writers`);
  }

  /**
   * Stores an entry whole (`tenants import`): created when its id is free, replaced when the stored one differs (its
   * creation time kept), left as it is when it is the same, secrets included.
   */
  async put(entry: JsonObject, now = Date.now()): Promise<'created' | 'replaced' | 'unchanged'> {
    const config = tenantSchema.parse(entry);
    const id = config.id;
    for (let i = 0; i < CAS_TRIES; i += 1) {
      const doc = await this.redis.hget(this.key(id), FIELD);
      if (doc === null) {
        const made = await this.create(entry, now);
        if (made.kind === 'created') return 'created';
        continue;
      }
      const current = this.#open(id, doc);
      if (sameJson(current.entry, entry)) {
        // The same document: filed again only if a create stopped before it was.
        if ((await this.redis.zscore(this.indexKey(), id)) === null) await this.#announce(id, 'put');
        return 'unchanged';
      }
      const next = this.#seal(id, entry, config, current.createdAt, now);
      if ((await CHECK_AND_SET.run(this.redis, [this.key(id)], [FIELD, doc, next])) === 1) {
        await this.#announce(id, 'put');
        this.#remember(id, next);
        return 'replaced';
      }
    }
    throw new Error(`tenant ${id}: too many concurrent writers`);
  }

  /** Removes a stored tenant (its document and its id in the index; its state is not touched): false when there was none. */
  async remove(id: string): Promise<boolean> {
    // The document first: a reader told of an id without a document counts it removed.
    const removed = await this.redis.unlink(this.key(id));
    if (removed > 0 || (await this.redis.zscore(this.indexKey(), id)) !== null) await this.#announce(id, 'del');
    if (this.#cache.delete(id)) this.o.onChange?.(id);
    return removed > 0;
  }

  #needBox(): SecretBox {
    if (this.box === undefined) throw new Error('stored tenants need PLATFORM_TOKEN_KEY (their secrets are sealed under it)');
    return this.box;
  }

  /** The document of an entry: its secrets (the paths of `config`'s Secrets) taken out and sealed. */
  #seal(id: string, entry: JsonObject, config: TenantConfig, createdAt: number, updatedAt: number): string {
    const box = this.#needBox();
    const settings = copy(entry) as JsonObject;
    const sealed: Record<string, string> = {};
    for (const path of secretPaths(config)) {
      const name = path.join('.');
      const value = getAt(config, path) as Secret;
      sealed[name] = box.encrypt(value.reveal(), `${this.key(id)} ${name}`);
      deleteAt(settings, path);
    }
    return JSON.stringify({ settings, sealed, createdAt, updatedAt } satisfies Doc);
  }

  /** The entry a document was made from (secrets opened). */
  #open(id: string, doc: string): { entry: JsonObject; settings: JsonObject; secrets: string[]; createdAt: number; updatedAt: number } {
    const box = this.#needBox();
    const d = JSON.parse(doc) as Doc;
    const entry = copy(d.settings) as JsonObject;
    for (const [name, value] of Object.entries(d.sealed)) setAt(entry, name.split('.'), box.decrypt(value, `${this.key(id)} ${name}`));
    return { entry, settings: d.settings, secrets: Object.keys(d.sealed).sort(), createdAt: d.createdAt, updatedAt: d.updatedAt };
  }

  #remember(id: string, doc: string): StoredTenant {
    const opened = this.#open(id, doc);
    const config: TenantConfig = tenantSchema.parse(opened.entry);
    if (config.id !== id) throw new Error(`the document under ${this.key(id)} names tenant ${config.id}`);
    const tenant: StoredTenant = { config, settings: opened.settings, secrets: opened.secrets, etag: etagOf(doc), createdAt: opened.createdAt, updatedAt: opened.updatedAt };
    const had = this.#cache.has(id);
    this.#cache.set(id, { doc, tenant });
    if (had) this.o.onChange?.(id);
    return tenant;
  }
}

/** Whether an If-Match header names this entity tag (`*` names any; weak tags never match: RFC 9110 13.1.1). */
export function matches(ifMatch: string, etag: string): boolean {
  return ifMatch
    .split(',')
    .map((t) => t.trim())
    .some((t) => t === '*' || t === etag);
}
