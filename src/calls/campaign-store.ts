/**
 * Campaigns in Redis: the campaign itself (a JSON string), its planned requests and per-number entries (one
 * HASH each), the skipped contacts, an explicit list's targets, a cancel flag, and per tenant an index of
 * campaigns and of unknown outcomes. Keys live for `retentionMs` (default 90 days) from the campaign's creation.
 *
 * Keys: <prefix>:calls:c:<id>[:req|:ent|:skip|:input|:cancel], <prefix>:calls:t:<tenant>:campaigns (ZSET by
 * creation time), <prefix>:calls:t:<tenant>:unknown (SET of "<id> <number>").
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { campaignKey, tenantKey } from '../redis/keys.js';
import { LuaScript } from '../redis/script.js';
import {
  campaignMetaSchema,
  entryRecordSchema,
  requestRecordSchema,
  skipSchema,
  targetSchema,
  type CampaignMeta,
  type CampaignReport,
  type EntryRecord,
  type EntryState,
  type RequestRecord,
  type RequestState,
  type Skip,
  type Target,
} from './types.js';

const CAS_REQUEST = new LuaScript('calls/lua/campaign-cas-request', { numKeys: 1 });

export const ENTRY_STATES: readonly EntryState[] = ['planned', 'called', 'unknown', 'failed', 'cooldown', 'cancelled', 'confirmed', 'released'];

function parseJson<T>(schema: z.ZodType<T>, raw: string, where: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`corrupt value in ${where}: not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`corrupt value in ${where}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

export interface StoredPlan {
  requests: RequestRecord[];
  entries: EntryRecord[];
  skipped: Skip[];
}

export class CampaignStore {
  readonly retentionMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    options: { retentionMs?: number } = {},
  ) {
    this.retentionMs = options.retentionMs ?? 90 * 86_400_000;
  }

  private k(id: string, part?: 'req' | 'ent' | 'skip' | 'input' | 'cancel' | 'lock'): string {
    return campaignKey(this.prefix, id, ['calls', 'c'], ...(part ? [part] : []));
  }
  private tk(tenant: string, part: 'campaigns' | 'unknown'): string {
    return tenantKey(this.prefix, tenant, ['calls', 't'], part);
  }
  lockKey(id: string): string {
    return this.k(id, 'lock');
  }

  /** Stores a new campaign (and an explicit list's targets); false when the id is taken. */
  async create(meta: CampaignMeta, input?: Target[]): Promise<boolean> {
    const valid = campaignMetaSchema.parse(meta);
    const px = String(this.retentionMs);
    if ((await this.redis.set(this.k(valid.id), JSON.stringify(valid), 'PX', px, 'NX')) !== 'OK') return false;
    // The campaign's keys and its tenant's index are two hash tags (two slots on a cluster): two writes, the
    // input first. A crash between them leaves a campaign nobody enqueued and the index does not list; it expires.
    if (input) await this.redis.set(this.k(valid.id, 'input'), JSON.stringify(input), 'PX', px);
    await this.redis.zadd(this.tk(valid.tenant, 'campaigns'), valid.createdAt, valid.id);
    return true;
  }

  async get(id: string): Promise<CampaignMeta | undefined> {
    const raw = await this.redis.get(this.k(id));
    return raw === null ? undefined : parseJson(campaignMetaSchema, raw, this.k(id));
  }

  /** Merges `patch` into the campaign (the campaign job is its only writer while it runs). */
  async update(id: string, patch: Partial<CampaignMeta>): Promise<CampaignMeta> {
    const current = await this.get(id);
    if (!current) throw new Error(`campaign ${id} does not exist`);
    const next = campaignMetaSchema.parse({ ...current, ...patch });
    await this.redis.set(this.k(id), JSON.stringify(next), 'KEEPTTL');
    return next;
  }

  async input(id: string): Promise<Target[] | undefined> {
    const raw = await this.redis.get(this.k(id, 'input'));
    return raw === null ? undefined : parseJson(z.array(targetSchema), raw, this.k(id, 'input'));
  }

  /** Stores the plan and the campaign's new state in one MULTI: a plan is there whole or not at all. */
  async storePlan(meta: CampaignMeta, plan: StoredPlan): Promise<void> {
    const valid = campaignMetaSchema.parse(meta);
    const id = valid.id;
    const px = await this.redis.pttl(this.k(id));
    const ttl = px > 0 ? px : this.retentionMs;
    const m = this.redis.multi().del(this.k(id, 'req'), this.k(id, 'ent'), this.k(id, 'skip'));
    if (plan.requests.length > 0) m.hset(this.k(id, 'req'), ...plan.requests.flatMap((r) => [String(r.index), JSON.stringify(r)]));
    for (let i = 0; i < plan.entries.length; i += 1000) {
      m.hset(this.k(id, 'ent'), ...plan.entries.slice(i, i + 1000).flatMap((e) => [e.number, JSON.stringify(e)]));
    }
    m.set(this.k(id, 'skip'), JSON.stringify(plan.skipped));
    m.set(this.k(id), JSON.stringify(valid), 'KEEPTTL');
    for (const part of ['req', 'ent', 'skip'] as const) m.pexpire(this.k(id, part), ttl);
    await m.exec();
  }

  async requests(id: string): Promise<RequestRecord[]> {
    const all = await this.redis.hgetall(this.k(id, 'req'));
    return Object.entries(all)
      .map(([field, raw]) => parseJson(requestRecordSchema, raw, `${this.k(id, 'req')} ${field}`))
      .sort((a, b) => a.index - b.index);
  }

  async request(id: string, index: number): Promise<RequestRecord | undefined> {
    const raw = await this.redis.hget(this.k(id, 'req'), String(index));
    return raw === null ? undefined : parseJson(requestRecordSchema, raw, `${this.k(id, 'req')} ${index}`);
  }

  /** Writes `next` only if the request is still in state `from` (the step planned -> sending is taken once). */
  async transition(id: string, from: RequestState, next: RequestRecord): Promise<boolean> {
    const valid = requestRecordSchema.parse(next);
    return (await CAS_REQUEST.run(this.redis, [this.k(id, 'req')], [String(valid.index), from, JSON.stringify(valid)])) === 1;
  }

  async putRequest(id: string, rec: RequestRecord): Promise<void> {
    await this.redis.hset(this.k(id, 'req'), String(rec.index), JSON.stringify(requestRecordSchema.parse(rec)));
  }

  async putEntries(id: string, entries: readonly EntryRecord[]): Promise<void> {
    if (entries.length === 0) return;
    await this.redis.hset(this.k(id, 'ent'), ...entries.flatMap((e) => [e.number, JSON.stringify(entryRecordSchema.parse(e))]));
  }

  async entries(id: string, numbers?: readonly string[]): Promise<EntryRecord[]> {
    if (numbers) {
      if (numbers.length === 0) return [];
      const values = await this.redis.hmget(this.k(id, 'ent'), ...numbers);
      return values.flatMap((raw, i) => (raw === null ? [] : [parseJson(entryRecordSchema, raw, `${this.k(id, 'ent')} ${numbers[i] ?? ''}`)]));
    }
    const all = await this.redis.hgetall(this.k(id, 'ent'));
    return Object.entries(all)
      .map(([field, raw]) => parseJson(entryRecordSchema, raw, `${this.k(id, 'ent')} ${field}`))
      .sort((a, b) => a.request - b.request || a.number.localeCompare(b.number));
  }

  async skipped(id: string): Promise<Skip[]> {
    const raw = await this.redis.get(this.k(id, 'skip'));
    return raw === null ? [] : parseJson(z.array(skipSchema), raw, this.k(id, 'skip'));
  }

  /** Asks a campaign to stop before its next request; false when there is no such campaign. */
  async cancel(id: string): Promise<boolean> {
    if ((await this.redis.exists(this.k(id))) === 0) return false;
    await this.redis.set(this.k(id, 'cancel'), String(Date.now()), 'PX', this.retentionMs);
    return true;
  }

  async isCancelled(id: string): Promise<boolean> {
    return (await this.redis.exists(this.k(id, 'cancel'))) === 1;
  }

  /** The tenant's campaigns, newest first (those past retention are dropped from the index). */
  async recent(tenant: string, limit = 20): Promise<CampaignMeta[]> {
    await this.redis.zremrangebyscore(this.tk(tenant, 'campaigns'), '-inf', Date.now() - this.retentionMs);
    const ids = await this.redis.zrevrange(this.tk(tenant, 'campaigns'), 0, limit - 1);
    const metas = await Promise.all(ids.map((id) => this.get(id)));
    return metas.filter((m): m is CampaignMeta => m !== undefined);
  }

  async addUnknown(tenant: string, id: string, numbers: readonly string[]): Promise<void> {
    if (numbers.length > 0) await this.redis.sadd(this.tk(tenant, 'unknown'), ...numbers.map((n) => `${id} ${n}`));
  }

  async removeUnknown(tenant: string, id: string, numbers: readonly string[]): Promise<void> {
    if (numbers.length > 0) await this.redis.srem(this.tk(tenant, 'unknown'), ...numbers.map((n) => `${id} ${n}`));
  }

  /**
   * Drops the tenant's unknown outcomes whose campaign is gone (past `retentionMs`, so nothing is left to confirm
   * or release them against), and the campaign index's expired ids. Returns how many outcomes went.
   */
  async pruneUnknown(tenant: string): Promise<number> {
    await this.redis.zremrangebyscore(this.tk(tenant, 'campaigns'), '-inf', Date.now() - this.retentionMs);
    const byCampaign = await this.unknownOf(tenant);
    const gone: string[] = [];
    for (const [id, numbers] of byCampaign) {
      if ((await this.redis.exists(this.k(id))) === 0) gone.push(...numbers.map((n) => `${id} ${n}`));
    }
    if (gone.length > 0) await this.redis.srem(this.tk(tenant, 'unknown'), ...gone);
    return gone.length;
  }

  /** How many unknown outcomes of a tenant wait for an operator (one SCARD). */
  async countUnknown(tenant: string): Promise<number> {
    return this.redis.scard(this.tk(tenant, 'unknown'));
  }

  /** Unknown outcomes of a tenant waiting for an operator, grouped by campaign. */
  async unknownOf(tenant: string): Promise<Map<string, string[]>> {
    const members = await this.redis.smembers(this.tk(tenant, 'unknown'));
    const out = new Map<string, string[]>();
    for (const m of members.sort()) {
      const [id, number] = m.split(' ');
      if (id === undefined || number === undefined) continue;
      out.set(id, [...(out.get(id) ?? []), number]);
    }
    return out;
  }

  async report(id: string): Promise<CampaignReport | undefined> {
    const campaign = await this.get(id);
    if (!campaign) return undefined;
    const [entries, skipped] = await Promise.all([this.entries(id), this.skipped(id)]);
    const counts = Object.fromEntries(ENTRY_STATES.map((s) => [s, 0])) as Record<EntryState, number>;
    for (const e of entries) counts[e.state] += 1;
    return { campaign, counts: { ...counts, skipped: skipped.length }, skipped, entries };
  }
}
