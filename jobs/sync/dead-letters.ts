import { AmbiguousError, AuthError, isCollectionsError, ValidationError, type CollectionsError } from '../../src/collections/errors.js';
import type { Entity } from '../../src/glossary.js';
import type { BadRecord } from '../../src/platforms/types.js';
import type { DeadLetterCode } from '../../src/state/dead-letters.js';
import type { RunContext } from './context.js';

/** Dead-letters one record the service rejected or the mapper could not build. */
export async function deadLetter(
  ctx: RunContext,
  entity: Entity,
  platformId: string,
  reason: string,
  code: DeadLetterCode,
  record: unknown,
  detail?: unknown,
): Promise<void> {
  ctx.count(entity, 'deadLettered');
  ctx.note(`${entity} ${platformId}: ${reason}`);
  ctx.deadLettersHeld = true;
  await ctx.services.stores.deadLetters.add(ctx.tenant, [
    { entity, platformId, reason, code, record, runId: ctx.runId, at: Date.now(), ...(detail === undefined ? {} : { detail }) },
  ]);
}

/**
 * Ends the dead letters of records whose content is now in the service: pushed by this run, or found unchanged
 * with an id-map entry (a hash is stored only once its content is pushed, never with a dead letter, so an
 * unchanged record is one whose content the service holds). Counts those that had one as `resolved`; records
 * without one cost no request, only their share of one Lua call per page.
 */
export async function resolveDeadLetters(ctx: RunContext, entity: Entity, platformIds: readonly string[]): Promise<void> {
  if (platformIds.length === 0 || !ctx.deadLettersHeld) return;
  const removed = await ctx.services.stores.deadLetters.remove(ctx.tenant, platformIds.map((platformId) => ({ entity, platformId })));
  if (removed > 0) ctx.count(entity, 'resolved', removed);
}

/** The code of a record set aside: its write may or may not have happened (see `setAside`). */
export const UNSETTLED = 'UNSETTLED';
/** With no request answered for this long, the service is down: a failing record ends the run instead. */
export const SERVICE_DOWN_MS = 60_000;

/**
 * Settles a failed record: dead-lettered when it is the record's fault (422, another 4xx); set aside when its
 * write is still unsettled after the client's retries (ambiguous, 5xx, resets, 429s: it concerns this record);
 * rethrown when it concerns every record (auth refused, the run stopped, Redis or a bug, or the service has
 * answered nothing for SERVICE_DOWN_MS), which ends the run.
 */
export async function deadLetterIfRejected(ctx: RunContext, entity: Entity, platformId: string, record: unknown, err: unknown): Promise<void> {
  if (err instanceof ValidationError) {
    const where = err.local ? 'refused before sending' : 'rejected by the service';
    await deadLetter(ctx, entity, platformId, `${where}: ${err.message}`, 'COLLECTIONS_REJECTED', record, err.detail);
    return;
  }
  if (isCollectionsError(err) && err.code === 'COLLECTIONS_HTTP' && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 409) {
    await deadLetter(ctx, entity, platformId, `rejected by the service with HTTP ${err.status}`, err.code, record);
    return;
  }
  if (isUnsettled(err) && !ctx.signal.aborted && Date.now() - ctx.lastAnsweredAt <= (ctx.services.settings.serviceDownMs ?? SERVICE_DOWN_MS)) {
    await setAside(ctx, entity, platformId, record, err);
    return;
  }
  throw err;
}

function isUnsettled(err: unknown): err is CollectionsError {
  if (!isCollectionsError(err) || err instanceof AuthError) return false;
  if (err instanceof AmbiguousError) return true;
  switch (err.code) {
    case 'COLLECTIONS_TRANSIENT':
    case 'COLLECTIONS_RATE_LIMITED':
    case 'COLLECTIONS_BAD_RESPONSE':
      return true;
    case 'COLLECTIONS_HTTP':
      return err.status === undefined || err.status >= 500 || err.status === 408 || err.status === 409;
    default:
      return false;
  }
}

/**
 * A record whose write is unsettled: kept as a dead letter at once (so a checkpoint may pass it: it is
 * recorded, and the run's last step finds it in the store even after a crash), counted `setAside`, and pushed
 * once more at the end of the run. Unsettled then too (`ctx.lastChance`), it stays a dead letter that says the
 * record may exist in the service, counted `deadLettered`: a later run pushes it again, and a contact is
 * adopted by extPlatformId (its intent stays) instead of created twice.
 */
async function setAside(ctx: RunContext, entity: Entity, platformId: string, record: unknown, err: CollectionsError): Promise<void> {
  const reason = ctx.lastChance
    ? `may exist in the service: ${err.message} (still unsettled when retried at the end of the run; the next run adopts it by extPlatformId or pushes it again)`
    : `set aside: ${err.message} (retried at the end of the run)`;
  ctx.count(entity, ctx.lastChance ? 'deadLettered' : 'setAside');
  ctx.note(`${entity} ${platformId}: ${reason}`);
  ctx.services.logger.warn({ entity, platformId, code: err.code, lastChance: ctx.lastChance }, 'record set aside: its write is unsettled');
  ctx.deadLettersHeld = true;
  await ctx.services.stores.deadLetters.add(ctx.tenant, [{ entity, platformId, reason, code: UNSETTLED, record, runId: ctx.runId, at: Date.now() }]);
}

/** Records bad platform records (bad lines, broken rules) as dead letters with their place and reason. */
export async function reportBad(ctx: RunContext, bad: BadRecord[]): Promise<void> {
  if (bad.length === 0) return;
  for (const b of bad) {
    ctx.count(b.entity, 'badRecords');
    ctx.note(`${b.place}: ${b.reason}`);
  }
  ctx.deadLettersHeld = true;
  await ctx.services.stores.deadLetters.add(
    ctx.tenant,
    bad.map((b) => ({
      entity: b.entity,
      place: b.place,
      reason: b.reason,
      code: 'BAD_RECORD',
      runId: ctx.runId,
      at: Date.now(),
      ...(b.platformId === undefined ? {} : { platformId: b.platformId }),
    })),
  );
}
