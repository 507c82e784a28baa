import { isCollectionsError, ValidationError } from '../../src/collections/errors.js';
import type { Entity } from '../../src/glossary.js';
import type { BadRecord } from '../../src/platforms/types.js';
import type { RunContext } from './context.js';

/** Dead-letters one record the service rejected or the mapper could not build. */
export async function deadLetter(
  ctx: RunContext,
  entity: Entity,
  platformId: string,
  reason: string,
  code: string,
  record: unknown,
  detail?: unknown,
): Promise<void> {
  ctx.count(entity, 'deadLettered');
  ctx.note(`${entity} ${platformId}: ${reason}`);
  await ctx.services.stores.deadLetters.add(ctx.tenant, [
    { entity, platformId, reason, code, record, runId: ctx.runId, at: Date.now(), ...(detail === undefined ? {} : { detail }) },
  ]);
}

/** Dead-letters a service error on a record when it is the record's fault (422); rethrows anything else. */
export async function deadLetterIfRejected(ctx: RunContext, entity: Entity, platformId: string, record: unknown, err: unknown): Promise<void> {
  if (err instanceof ValidationError) {
    const where = err.local ? 'refused before sending' : 'rejected by the service';
    await deadLetter(ctx, entity, platformId, `${where}: ${err.message}`, err.code, record, err.detail);
    return;
  }
  if (isCollectionsError(err) && err.code === 'COLLECTIONS_HTTP' && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 409) {
    await deadLetter(ctx, entity, platformId, `rejected by the service with HTTP ${err.status}`, err.code, record);
    return;
  }
  throw err;
}

/** Records bad platform records (bad lines, broken rules) as dead letters with their place and reason. */
export async function reportBad(ctx: RunContext, bad: BadRecord[]): Promise<void> {
  if (bad.length === 0) return;
  for (const b of bad) {
    ctx.count(b.entity, 'badRecords');
    ctx.note(`${b.place}: ${b.reason}`);
  }
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
