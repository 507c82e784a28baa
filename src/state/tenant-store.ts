/**
 * Tenants created over the control API (issue "Tenants as data"): each one a document in Redis beside the rest of
 * its state (`<base>:tenant:{<id>}`, a HASH whose field `doc` holds it), and one index of their ids for the whole
 * deployment (`<base>:tenants`, a sorted set read in id order). The document is the tenants file's entry as it was
 * sent (defaults not filled in, so a JSON merge patch applies to what the caller wrote), with every field the schema
 * makes a `Secret` taken out and sealed under PLATFORM_TOKEN_KEY (the app's token cipher), each bound to this key and
 * its field: a secret is never in Redis in plain text, and a sealed one copied elsewhere does not open.
 *
 * Every process keeps the documents it last read (`refresh`), parsed, so the app's tenant lookup stays synchronous;
 * a write here updates this process's copy at once. Other processes see a change at their next refresh.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { tenantSchema, type TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { globalKey } from '../redis/keys.js';
import { Secret } from '../secret.js';
import { CHECK_AND_SET } from './cursors.js';
import { stateKey } from './keys.js';

const FIELD = 'doc';
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

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** The token cipher of PLATFORM_TOKEN_KEY; without it nothing can be created and stored documents cannot be read. */
    private readonly box: SecretBox | undefined,
    private readonly o: { logger?: Logger; onChange?: (id: string) => void } = {},
  ) {}

  key(id: string): string {
    return stateKey(this.prefix, 'tenant', id);
  }

  indexKey(): string {
    return globalKey(this.prefix, 'tenants');
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

  /** Reads every stored document again (those unchanged since the last read are not parsed again). */
  async refresh(): Promise<void> {
    const ids = await this.redis.zrange(this.indexKey(), 0, -1);
    // One HGET per tenant (each on its own slot: no multi-key command across a cluster), sent together.
    const docs = await Promise.all(ids.map((id) => this.redis.hget(this.key(id), FIELD)));
    const seen = new Set<string>();
    ids.forEach((id, i) => {
      const doc = docs[i];
      if (doc === null || doc === undefined) return;
      seen.add(id);
      if (this.#cache.get(id)?.doc === doc) return;
      try {
        this.#remember(id, doc);
      } catch (err) {
        this.o.logger?.warn({ tenant: id, err: (err as Error).message }, 'stored tenant not loaded');
        if (this.#cache.delete(id)) this.o.onChange?.(id);
      }
    });
    for (const id of [...this.#cache.keys()]) {
      if (seen.has(id)) continue;
      this.#cache.delete(id);
      this.o.onChange?.(id);
    }
  }

  /**
   * Stores a new tenant from its entry (already valid under the tenants file's schema); `exists` when the id is taken
   * in the store (the caller checks the file).
   */
  async create(entry: JsonObject, now = Date.now()): Promise<{ kind: 'created'; tenant: StoredTenant } | { kind: 'exists' }> {
    const config = tenantSchema.parse(entry);
    const doc = this.#seal(config.id, entry, config, now, now);
    // Indexed first: a crash between the two leaves an id without a document, which every reader skips (the
    // other order would leave a document no listing shows and whose id is refused as taken).
    await this.redis.zadd(this.indexKey(), 0, config.id);
    if ((await CHECK_AND_SET.run(this.redis, [this.key(config.id)], [FIELD, '', doc])) !== 1) return { kind: 'exists' };
    return { kind: 'created', tenant: this.#remember(config.id, doc) };
  }

  /**
   * Applies a JSON merge patch to the document; `ifMatch` (an entity tag) must name the version read, else `stale`.
   * `check` adds what the schema alone cannot say (settings of this deployment, identities shared with others).
   */
  async patch(id: string, patch: JsonObject, o: { ifMatch?: string; check?: (config: TenantConfig) => Issue[]; now?: number } = {}): Promise<PatchResult> {
    for (let i = 0; i < CAS_TRIES; i += 1) {
      const doc = await this.redis.hget(this.key(id), FIELD);
      if (doc === null) return { kind: 'missing' };
      if (o.ifMatch !== undefined && !matches(o.ifMatch, etagOf(doc))) return { kind: 'stale' };
      const current = this.#open(id, doc);
      const entry = mergePatch(current.entry, patch) as JsonObject;
      if (entry['id'] !== id) return { kind: 'invalid', issues: [{ path: ['id'], message: `the id of a tenant does not change (it names its state); delete it and create ${String(entry['id'])}` }] };
      const parsed = tenantSchema.safeParse(entry);
      if (!parsed.success) return { kind: 'invalid', issues: parsed.error.issues.map((x) => ({ path: x.path.map((p) => (typeof p === 'number' ? p : String(p))), message: x.message })) };
      const issues = o.check?.(parsed.data) ?? [];
      if (issues.length > 0) return { kind: 'invalid', issues };
      const next = this.#seal(id, entry, parsed.data, current.createdAt, o.now ?? Date.now());
      if ((await CHECK_AND_SET.run(this.redis, [this.key(id)], [FIELD, doc, next])) === 1) return { kind: 'patched', tenant: this.#remember(id, next) };
    }
    throw new Error(`tenant ${id}: too many concurrent writers`);
  }

  /** Removes a stored tenant (its document and its id in the index; its state is not touched): false when there was none. */
  async remove(id: string): Promise<boolean> {
    const removed = await this.redis.unlink(this.key(id));
    await this.redis.zrem(this.indexKey(), id);
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
