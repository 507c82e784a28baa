/**
 * Contacts: skip unchanged, PUT changed, POST new ones through the intent protocol (DESIGN.md "Exactly one
 * service record per platform record"): intent first, then POST, then the id-map entry; a record that finds an
 * intent without an id-map entry (a crash, or an answer lost after the service committed) looks the contact up by
 * name, matches it on extPlatformId and adopts it instead of creating a second one.
 */
import { AmbiguousError, AuthError, NotFoundError, RateLimitedError, ValidationError } from '../../src/collections/errors.js';
import type { ContactCreate, ContactUpdate } from '../../src/collections/schemas.js';
import { decideContact } from '../../src/mapping/index.js';
import { sleep } from '../../src/sleep.js';
import type { ContactRecord } from '../../src/platforms/records.js';
import type { Intent, IntentEntry } from '../../src/state/index.js';
import type { MirroredContact } from '../../src/state/record-mirror.js';
import type { RunContext } from './context.js';
import { inTurns, mapInTurns } from './turns.js';
import { deadLetter, deadLetterIfRejected, resolveDeadLetters } from './dead-letters.js';

const MAX_CREATE_ATTEMPTS = 3;

/**
 * What a create knows of its intent before it starts: begun by this page (`begun`), found from an earlier
 * interrupted create (`earlier`: look it up first), or unknown (`read` it first).
 */
type IntentPrior = { kind: 'begun' } | { kind: 'earlier'; intent: Intent } | { kind: 'read' };

/** Pushes one page of contact records; resolves when every record is pushed, skipped or dead-lettered. */
export async function pushContacts(ctx: RunContext, records: ContactRecord[]): Promise<void> {
  const { stores, mirror } = ctx.services;
  const ids = records.map((r) => r.id);
  const snapshot = ctx.snapshot();
  const states = await stores.records.getMany(ctx.tenant, 'contacts', ids);
  // Decided a few per turn of the event loop too (turns.ts): the answers in flight are read in between.
  const planned = await mapInTurns(records, (rec) => ({ rec, decision: decideContact(rec, states.get(rec.id)) }));
  // The intents of the page's new contacts, begun in one round trip before any of their POSTs is queued.
  const fresh = new Map<string, IntentEntry>();
  const at = Date.now();
  for (const { rec, decision } of planned) {
    if (decision.kind === 'create' && !fresh.has(rec.id)) fresh.set(rec.id, { platformId: rec.id, name: decision.body.name, at, runId: ctx.runId });
  }
  const earlier = await stores.intents.beginMany(ctx.tenant, [...fresh.values()]);
  // Unchanged contacts' cells (a pushed contact's are written with its id-map entry).
  const mirrored: MirroredContact[] = [];
  // Contacts whose content is in the service now (pushed, or unchanged and mapped): their dead letters end.
  const inService: string[] = [];

  await inTurns(planned, ({ rec, decision: batched }) =>
    ctx.serialized('contacts', rec.id, snapshot, async (waited) => {
      let decision = batched;
      let prior: IntentPrior = { kind: 'read' };
      if (waited) decision = decideContact(rec, await stores.records.get(ctx.tenant, 'contacts', rec.id));
      else if (fresh.has(rec.id)) {
        const found = earlier.get(rec.id);
        prior = found ? { kind: 'earlier', intent: found } : { kind: 'begun' };
      }
      if (decision.kind === 'dead-letter') {
        await deadLetter(ctx, 'contacts', rec.id, decision.reason, decision.code, rec);
        return;
      }
      if (decision.kind === 'unchanged') {
        ctx.count('contacts', 'skipped');
        mirrored.push(project(rec, decision.uuid));
        inService.push(rec.id);
        return;
      }
      if (decision.kind === 'skip') {
        ctx.count('contacts', 'skipped');
        return;
      }
      let pushedAs: { uuid: string; viaIntent: boolean };
      try {
        pushedAs = decision.kind === 'update' ? await update(ctx, rec, decision.body) : { uuid: await create(ctx, rec, decision.body, prior), viaIntent: true };
      } catch (err) {
        await deadLetterIfRejected(ctx, 'contacts', rec.id, rec, err);
        return;
      }
      // The intent ends in the same atomic write as the id-map entry (and the mirror's cells), never before it: a
      // crash before this write leaves the intent, and the next attempt adopts the contact instead of creating a
      // second one.
      const entry = { id: rec.id, uuid: pushedAs.uuid, hash: decision.hash, mirror: mirror.segment('contacts', project(rec, pushedAs.uuid)) };
      await ctx.writer.set('contacts', entry, { endIntent: pushedAs.viaIntent });
      ctx.noteDropped('contacts', rec.id, decision.dropped);
      inService.push(rec.id);
    }),
  );
  await Promise.all([mirror.putMany(ctx.tenant, 'contacts', mirrored), resolveDeadLetters(ctx, 'contacts', inService)]);
}

function project(rec: ContactRecord, uuid: string): MirroredContact {
  const c: MirroredContact = { id: rec.id, name: rec.name, deleted: rec.deleted, uuid };
  for (const f of ['nameAr', 'firstName', 'lastName', 'phoneNumber'] as const) {
    const v = rec[f];
    if (v !== undefined) c[f] = v;
  }
  return c;
}

async function update(ctx: RunContext, rec: ContactRecord, body: ContactUpdate): Promise<{ uuid: string; viaIntent: boolean }> {
  try {
    await ctx.request((call) => ctx.services.client.updateContact(body, call));
    ctx.count('contacts', 'updated');
    return { uuid: body.uuid, viaIntent: false };
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    // The mapped contact is gone from the service (removed by hand): forget its id-map entry and create it again,
    // with the body of a contact never pushed (the same content, so the same hash).
    ctx.services.logger.warn({ platformId: rec.id }, 'mapped contact not found in the service; creating it again');
    const anew = decideContact(rec, undefined);
    if (anew.kind !== 'create') throw err;
    return { uuid: await create(ctx, rec, anew.body, { kind: 'read' }), viaIntent: true };
  }
}

async function create(ctx: RunContext, rec: ContactRecord, body: ContactCreate, prior: IntentPrior): Promise<string> {
  const { intents } = ctx.services.stores;
  const earlier = prior.kind === 'earlier' ? prior.intent : prior.kind === 'read' ? await intents.get(ctx.tenant, rec.id) : undefined;
  if (earlier) {
    const found = await lookUp(ctx, earlier.name, rec.id);
    if (found) return adopt(ctx, rec.id, found);
  }
  for (let attempt = 1; ; attempt += 1) {
    // The intent begun for this page holds for the first attempt; a lookup that found nothing, or another
    // attempt, writes a new one (with this attempt's name and time) before the POST.
    if (attempt > 1 || prior.kind !== 'begun') await intents.begin(ctx.tenant, rec.id, { name: body.name, at: Date.now(), runId: ctx.runId });
    try {
      const created = await ctx.request((call) => ctx.services.client.createContact(body, call));
      ctx.count('contacts', 'created');
      return created.uuid;
    } catch (err) {
      // Refused before anything was created (422, 401, 404, 429): the intent is moot. Anything else (ambiguous,
      // aborted, a network error) may have created the contact: the intent stays, and the next attempt looks first.
      if (definitelyNotCreated(err)) {
        await intents.end(ctx.tenant, [rec.id]);
        throw err;
      }
      if (!(err instanceof AmbiguousError)) throw err;
      // The write may have happened: look before trying again. The intent stays until we know.
      await ctx.progress.during('recheck', sleep(ctx.services.settings.ambiguousRecheckMs, ctx.signal));
      const found = await lookUp(ctx, body.name, rec.id);
      if (found) return adopt(ctx, rec.id, found);
      if (attempt >= MAX_CREATE_ATTEMPTS) throw err;
    }
  }
}

function definitelyNotCreated(err: unknown): boolean {
  return err instanceof ValidationError || err instanceof AuthError || err instanceof NotFoundError || err instanceof RateLimitedError;
}

async function adopt(ctx: RunContext, _platformId: string, uuid: string): Promise<string> {
  ctx.count('contacts', 'adopted');
  return uuid;
}

/** Finds the service contact created for `platformId` (GET /contact filtered by name, matched on extPlatformId). */
async function lookUp(ctx: RunContext, name: string, platformId: string): Promise<string | undefined> {
  return ctx.request(async (call) => {
    for await (const contact of ctx.services.client.listAllContacts({ name: name.slice(0, 255) }, call)) {
      if (contact.extPlatformId === platformId) return contact.uuid;
    }
    return undefined;
  });
}
