/** What the stores hold, as the API shows it (schemas.ts): ISO times, counts per entity, no record bodies. */
import type { z } from '@hono/zod-openapi';
import type { ConnectionReport } from '../connect/status.js';
import { nestedCounts } from '../notify/events.js';
import { SYNC_TRIGGERS } from '../glossary.js';
import type { DeadLetterCode, DeadLetterEntry } from '../state/dead-letters.js';
import type { RunRecord } from '../state/runs.js';
import { RUN_PHASES, type connectionSchema, type deadLetterSchema, type runSchema, type runSummarySchema } from './schemas.js';

export const isoOf = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | undefined): string | null => (ms === undefined ? null : isoOf(ms));
/** A stored word the document lists as an enum, or null for one it does not (written by an older worker). */
export const known = <T extends string>(words: readonly T[], word: string | undefined): T | null => (words as readonly string[]).includes(word ?? '') ? (word as T) : null;

export function runSummaryOf(r: RunRecord): z.infer<typeof runSummarySchema> {
  return {
    runId: r.runId,
    mode: r.mode,
    trigger: known(SYNC_TRIGGERS, r.trigger),
    state: r.outcome === undefined ? 'running' : 'finished',
    outcome: r.outcome ?? null,
    requestedAt: isoOrNull(r.requestedAt),
    startedAt: isoOf(r.startedAt),
    finishedAt: isoOrNull(r.finishedAt),
    totals: nestedCounts(r.counts).total,
    errorCount: r.errors.length + r.errorsOmitted,
    firstError: r.errors[0] ?? null,
  };
}

/** `contacts.created` goes to byEntity.contacts.created; a count of no entity (`created`: all entities) to total. */
export function countsOf(counts: Record<string, number>): z.infer<typeof runSchema>['counts'] {
  return nestedCounts(counts);
}

export function runOf(tenantId: string, r: RunRecord, deadLetters: { items: DeadLetterEntry[]; more: boolean }): z.infer<typeof runSchema> {
  return {
    ...runSummaryOf(r),
    tenantId,
    phase: known(RUN_PHASES, r.phase),
    lastProgressAt: r.outcome === undefined ? isoOrNull(r.progressAt) : null,
    waitingOn: r.outcome === undefined && r.waiting ? r.waiting : null,
    stalls: r.stalls ? { count: r.stalls.count, lastAt: isoOf(r.stalls.at), lastReason: r.stalls.reason } : null,
    durationMs: r.finishedAt === undefined ? null : Math.max(0, r.finishedAt - r.startedAt),
    counts: countsOf(r.counts),
    errors: r.errors,
    errorsOmitted: r.errorsOmitted,
    deadLetters: { items: deadLetters.items.map(deadLetterOf), more: deadLetters.more },
  };
}

export function deadLetterOf(d: DeadLetterEntry): z.infer<typeof deadLetterSchema> {
  return {
    key: d.key,
    entity: d.entity,
    ...(d.platformId !== undefined ? { platformId: d.platformId } : {}),
    ...(d.place !== undefined ? { place: d.place } : {}),
    reason: d.reason,
    // Every writer passes a DeadLetterCode (jobs/sync/dead-letters.ts).
    code: d.code as DeadLetterCode,
    ...(d.detail !== undefined ? { detail: d.detail } : {}),
    runId: d.runId,
    firstRunId: d.firstRunId,
    lastRunId: d.runId,
    attempts: d.attempts,
    firstAt: isoOf(d.firstAt),
    at: isoOf(d.at),
    replayable: d.record !== undefined,
  };
}

export function connectionOf(r: ConnectionReport): z.infer<typeof connectionSchema> {
  return {
    state: r.state,
    ...(r.connection !== undefined ? { connection: r.connection } : {}),
    ...(r.name !== undefined ? { name: r.name } : {}),
    ...(r.via !== undefined ? { via: r.via } : {}),
    ...(r.connectedAt !== undefined ? { connectedAt: isoOf(r.connectedAt) } : {}),
    ...(r.refreshedAt !== undefined ? { refreshedAt: isoOf(r.refreshedAt) } : {}),
    ...(r.refreshTokenAgeDays !== undefined ? { refreshTokenAgeDays: r.refreshTokenAgeDays } : {}),
    ...(r.ageing !== undefined ? { ageing: r.ageing } : {}),
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
  };
}

/** A paging cursor as the API gives it (base64url of the index member), and back (undefined: not one of ours). */
export const encodeCursor = (member: string): string => Buffer.from(member, 'utf8').toString('base64url');
export function decodeCursor(cursor: string, valid: (member: string) => boolean): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const member = Buffer.from(cursor, 'base64url').toString('utf8');
  return valid(member) ? member : undefined;
}
