/**
 * Dead letters: records that cannot be pushed, one entry per (entity, platform id), or per (entity, place)
 * when there is no id, so a record dead-lettered again updates its entry and counts the attempt.
 *
 * Layout per tenant: a HASH `dead:<t>` (field = entry key, value = `attempts|firstAt|at|json`) and ZSETs
 * `dead:<t>:by:all` / `dead:<t>:by:<entity>` whose members are `<at, 15 digits>|<entry key>` under one score,
 * so lexicographic order is time order and a member string is a stable paging cursor.
 *
 * An entry names two runs, apart (decision 0224): `firstRunId`, the run that made it (kept however often it fails
 * again), and `runId`, the last run that tried it. An entry written before `firstRunId` was kept reads its `runId` as both.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ENTITIES, type Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { stateScript } from './script.js';
import { parseJson, StateCorruptError } from './stored.js';

/** Stored `record` / `detail` larger than this (JSON bytes) are cut, with a note. */
export const DEAD_LETTER_MAX_BYTES = 16 * 1024;
const DETAIL_PREVIEW_CHARS = 2048;

const entitySchema = z.enum(ENTITIES);

/**
 * Why a record is a dead letter (`code`), every one the sync writes: the service refused it (422: its `detail`
 * says why; another 4xx), the mapping refused it, its invoice's contact never arrived, its write stayed unsettled,
 * or the platform gave a record that could not be read (no record kept: the source needs fixing).
 */
export const DEAD_LETTER_CODES = ['COLLECTIONS_REJECTED', 'COLLECTIONS_HTTP', 'MAPPING_REJECTED', 'CONTACT_NOT_MAPPED', 'UNSETTLED', 'BAD_RECORD'] as const;
export type DeadLetterCode = (typeof DEAD_LETTER_CODES)[number];

export const deadLetterSchema = z
  .object({
    entity: entitySchema,
    platformId: z.string().min(1).optional(),
    /** Where a bad record was found (file:line, endpoint and page) when it has no id. */
    place: z.string().min(1).optional(),
    reason: z.string(),
    code: z.string(),
    /** The service's 422 detail, when it rejected the record. */
    detail: z.unknown().optional(),
    /** The canonical record, for replay. */
    record: z.unknown().optional(),
    runId: z.string(),
    at: z.number().int().nonnegative(),
  })
  .refine((d) => d.platformId !== undefined || d.place !== undefined, 'a dead letter needs a platformId or a place');
export type DeadLetter = z.input<typeof deadLetterSchema>;

const storedBodySchema = z.object({
  entity: entitySchema,
  platformId: z.string().optional(),
  place: z.string().optional(),
  reason: z.string(),
  code: z.string(),
  detail: z.unknown().optional(),
  record: z.unknown().optional(),
  /** The last run that tried the record. */
  runId: z.string(),
  /** The run that made the entry (absent in entries written before it was kept: their `runId` stands for it). */
  firstRunId: z.string().optional(),
  at: z.number(),
  /** Original JSON sizes of fields cut at DEAD_LETTER_MAX_BYTES (`record` is then absent, `detail` a preview). */
  truncated: z.object({ record: z.number().optional(), detail: z.number().optional() }).optional(),
});
export type DeadLetterEntry = Omit<z.infer<typeof storedBodySchema>, 'firstRunId'> & {
  /** The entry's key: pass it (or `{ entity, platformId | place }`) to `remove`. */
  key: string;
  /** The run that made the entry; `runId` is the last that tried it. */
  firstRunId: string;
  attempts: number;
  firstAt: number;
};

/** What names one entry: its key, or the entity and the platform id (or place). */
export type DeadLetterRef = string | { entity: Entity; platformId?: string; place?: string };

export function deadLetterKey(ref: { entity: Entity; platformId?: string | undefined; place?: string | undefined }): string {
  if (ref.platformId !== undefined) return `${ref.entity}:id:${ref.platformId}`;
  if (ref.place !== undefined) return `${ref.entity}:place:${ref.place}`;
  throw new Error('a dead letter reference needs a platformId or a place');
}

const pad = (at: number): string => String(at).padStart(15, '0');
const entityIndex = (e: Entity): number => ENTITIES.indexOf(e) + 1;

const ADD = stateScript('state/lua/dead-letters-add');
const REMOVE = stateScript('state/lua/dead-letters-remove');
const RANGE = stateScript('state/lua/dead-letters-range');
const PRUNE = stateScript('state/lua/dead-letters-prune');
const COUNTS = stateScript('state/lua/dead-letters-counts');

export interface DeadLetterCounts {
  total: number;
  byEntity: Record<Entity, number>;
}

export class DeadLetterStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return stateKey(this.prefix, 'dead', tenant);
  }

  private keys(tenant: string): string[] {
    return [this.key(tenant), stateKey(this.prefix, 'dead', tenant, 'by', 'all'), ...ENTITIES.map((e) => stateKey(this.prefix, 'dead', tenant, 'by', e))];
  }

  /**
   * Adds or updates entries (one Lua call). An existing entry keeps its firstAt and firstRunId and counts one more
   * attempt. Returns how many entries were new.
   */
  async add(tenant: string, entries: readonly DeadLetter[]): Promise<number> {
    if (entries.length === 0) return 0;
    const args: string[] = [];
    for (const input of entries) {
      const d = deadLetterSchema.parse(input);
      const body: z.infer<typeof storedBodySchema> = { entity: d.entity, reason: d.reason, code: d.code, runId: d.runId, at: d.at };
      if (d.platformId !== undefined) body.platformId = d.platformId;
      if (d.place !== undefined) body.place = d.place;
      const truncated: { record?: number; detail?: number } = {};
      if (d.record !== undefined) {
        const size = Buffer.byteLength(JSON.stringify(d.record) ?? '');
        if (size > DEAD_LETTER_MAX_BYTES) truncated.record = size;
        else body.record = d.record;
      }
      if (d.detail !== undefined) {
        const json = JSON.stringify(d.detail) ?? '';
        const size = Buffer.byteLength(json);
        if (size > DEAD_LETTER_MAX_BYTES) {
          truncated.detail = size;
          body.detail = `${json.slice(0, DETAIL_PREVIEW_CHARS)}... [truncated: ${size} bytes]`;
        } else body.detail = d.detail;
      }
      if (truncated.record !== undefined || truncated.detail !== undefined) body.truncated = truncated;
      args.push(deadLetterKey(d), String(entityIndex(d.entity)), pad(d.at), d.runId, JSON.stringify(body));
    }
    return Number(await ADD.run(this.redis, this.keys(tenant), args));
  }

  /**
   * The entries `runId` made (their firstRunId), newest first: those whose last attempt is at or after `since` (the
   * run's start: an entry's last attempt only moves later), read `pageSize` at a time, at most `pages` pages. `more`:
   * the pages ran out before the entries did, or (with `limit`) more than `limit` were found: the reading stops there
   * and the first `limit` are answered (a run page shows 100 of its 10,000: it reads one page, not ten).
   */
  async madeBy(tenant: string, runId: string, since: number, o: { pageSize?: number; pages?: number; limit?: number } = {}): Promise<{ entries: DeadLetterEntry[]; more: boolean }> {
    const made: DeadLetterEntry[] = [];
    let before: string | undefined;
    for (let n = 0; n < (o.pages ?? 10); n += 1) {
      const page = await this.page(tenant, { limit: o.pageSize ?? 500, from: since, ...(before !== undefined ? { before } : {}) });
      made.push(...page.entries.filter((e) => e.firstRunId === runId));
      if (o.limit !== undefined && made.length > o.limit) return { entries: made.slice(0, o.limit), more: true };
      if (page.next === undefined) return { entries: made, more: false };
      before = page.next;
    }
    return { entries: made, more: true };
  }

  /** Newest first, optionally of one entity (one round trip). */
  async list(tenant: string, options: { entity?: Entity; limit?: number; offset?: number } = {}): Promise<DeadLetterEntry[]> {
    const { entries } = await this.range(tenant, options.entity, 'rev', '-', '+', options.offset ?? 0, options.limit ?? 50);
    return entries;
  }

  /**
   * Entries for replay, oldest first, with their records. Read-only: an entry leaves the store when its
   * record is pushed (`remove`) and is updated when it fails again (`add`), so a replay that dies loses
   * nothing. Page with `after` (the `next` of the previous call); `until` (ms) leaves out entries written
   * after the replay began, so records that fail again are not taken twice in one pass.
   */
  async take(
    tenant: string,
    options: { entity?: Entity; limit?: number; after?: string; until?: number } = {},
  ): Promise<{ entries: DeadLetterEntry[]; next?: string }> {
    const min = options.after === undefined ? '-' : `(${options.after}`;
    const max = options.until === undefined ? '+' : `(${pad(Math.floor(options.until) + 1)}`;
    const limit = options.limit ?? 500;
    const { entries, last } = await this.range(tenant, options.entity, 'fwd', min, max, 0, limit);
    return last !== undefined && entries.length >= limit ? { entries, next: last } : { entries };
  }

  /**
   * One page, newest first (one round trip): entries strictly older than `before` (the `next` of the previous page:
   * an index member, stable while entries come and go), and within `[from, until]` (ms of their last attempt) when
   * given. `next` is there when more entries follow (the page looks one entry ahead): on the last page it is absent.
   */
  async page(
    tenant: string,
    options: { entity?: Entity; limit?: number; before?: string; from?: number; until?: number } = {},
  ): Promise<{ entries: DeadLetterEntry[]; next?: string }> {
    const limit = options.limit ?? 50;
    const upper = options.until === undefined ? '+' : `(${pad(Math.floor(options.until) + 1)}`;
    const max = options.before === undefined ? upper : upper === '+' || options.before < upper.slice(1) ? `(${options.before}` : upper;
    const min = options.from === undefined ? '-' : `[${pad(Math.max(0, Math.floor(options.from)))}`;
    const { entries, members } = await this.range(tenant, options.entity, 'rev', min, max, 0, limit + 1);
    return entries.length > limit ? { entries: entries.slice(0, limit), next: members[limit - 1] as string } : { entries };
  }

  /** Whether `cursor` has the shape of an index member (`<15 digits>|<entry key>`): a paging cursor to pass back. */
  static isCursor(cursor: string): boolean {
    return /^\d{15}\|[a-z]+:(id|place):.+$/s.test(cursor) && cursor.length <= 4096;
  }

  /** Removes entries (one Lua call); returns how many there were. */
  async remove(tenant: string, refs: readonly DeadLetterRef[]): Promise<number> {
    if (refs.length === 0) return 0;
    const keys = refs.map((r) => (typeof r === 'string' ? r : deadLetterKey(r)));
    return Number(await REMOVE.run(this.redis, this.keys(tenant), keys));
  }

  /**
   * Drops entries whose last attempt is older than `before` (ms), in batches: a record that vanished from the
   * source is never tried again, so its entry would stay forever. Returns how many went.
   */
  async prune(tenant: string, before: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = Number(await PRUNE.run(this.redis, this.keys(tenant), [pad(Math.max(0, Math.floor(before))), 500]));
      total += n;
      if (n < 500) return total;
    }
  }

  async count(tenant: string): Promise<number> {
    return this.redis.hlen(this.key(tenant));
  }

  /** Total and per-entity counts (one round trip). */
  async counts(tenant: string): Promise<DeadLetterCounts> {
    const reply = (await COUNTS.run(this.redis, this.keys(tenant), [])) as number[];
    const byEntity = Object.fromEntries(ENTITIES.map((e, i) => [e, Number(reply[i + 1] ?? 0)])) as Record<Entity, number>;
    return { total: Number(reply[0] ?? 0), byEntity };
  }

  keysOf(tenant: string): string[] {
    return this.keys(tenant);
  }

  async clear(tenant: string): Promise<void> {
    await this.redis.unlink(...this.keys(tenant));
  }

  private async range(
    tenant: string,
    entity: Entity | undefined,
    dir: 'rev' | 'fwd',
    min: string,
    max: string,
    offset: number,
    limit: number,
  ): Promise<{ entries: DeadLetterEntry[]; last?: string; members: string[] }> {
    const keys = this.keys(tenant);
    const index = entity === undefined ? keys[1] : keys[1 + entityIndex(entity)];
    const hash = keys[0] as string;
    const flat = (await RANGE.run(this.redis, [hash, index as string], [dir, min, max, offset, limit])) as string[];
    const entries: DeadLetterEntry[] = [];
    /** The index member of each entry, in order. */
    const members: string[] = [];
    let last: string | undefined;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const member = flat[i] as string;
      const raw = flat[i + 1] as string;
      last = member;
      if (raw === '') continue; // index ahead of the hash: never written so, but harmless to skip
      entries.push(decode(hash, member.slice(16), raw));
      members.push(member);
    }
    return last === undefined ? { entries, members } : { entries, last, members };
  }
}

function decode(hash: string, key: string, raw: string): DeadLetterEntry {
  const m = /^(\d+)\|(\d+)\|(\d+)\|/.exec(raw);
  if (!m) throw new StateCorruptError(hash, key, 'expected "attempts|firstAt|at|json"');
  const { firstRunId, ...body } = parseJson(storedBodySchema, raw.slice(m[0].length), hash, key);
  return { ...body, key, firstRunId: firstRunId ?? body.runId, attempts: Number(m[1]), firstAt: Number(m[2]) };
}
