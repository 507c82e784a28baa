/**
 * A tenant's first sync adopts the contacts that already exist in the service (the whole GET /contact listing,
 * matched on extPlatformId), so nothing that is already there is created twice. No record of the run is pushed
 * before the adoption has ended (pipeline.ts), so its listing is the run's head: the first page gives the number
 * of pages, and the others are read a window at a time through the run's request pool (a service holding 50,000
 * contacts is 500 pages: read one at a time, they held the run's first push back by 500 round trips). Pages are
 * taken in listing order, so the contact adopted for an extPlatformId listed twice is the first one, as before.
 */
import type { Contact, ContactPage } from '../../src/collections/schemas.js';
import type { RunContext } from './context.js';

/** The interface's largest page of GET /contact. */
export const ADOPT_PAGE_SIZE = 100;

/** Id-map entries written per round trip while adopting. */
const ADOPT_BATCH = 500;

export async function adoptExisting(ctx: RunContext): Promise<void> {
  const { flags, stores } = ctx.services;
  if ((await flags.get(ctx.tenant, 'adopted')) !== null) return;
  const seen = new Set<string>();
  let batch: { id: string; uuid: string }[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const known = await stores.records.getMany(ctx.tenant, 'contacts', batch.map((b) => b.id));
    const fresh = batch.filter((b) => known.get(b.id)?.uuid === undefined);
    batch = [];
    await stores.records.setMany(ctx.tenant, 'contacts', fresh);
    ctx.count('contacts', 'adopted', fresh.length);
  };
  const take = async (contacts: Contact[]): Promise<void> => {
    for (const contact of contacts) {
      const ext = contact.extPlatformId;
      if (ext === null || ext === undefined || ext === '' || seen.has(ext)) continue;
      seen.add(ext);
      batch.push({ id: ext, uuid: contact.uuid });
      if (batch.length >= ADOPT_BATCH) await flush();
    }
  };
  await listInOrder(ctx, take);
  await flush();
  await flags.set(ctx.tenant, 'adopted', new Date().toISOString());
}

/**
 * Every contact of the service, to `onPage` page by page in listing order. After the first page, pages are read a
 * window at a time, as many as the run's pool holds (each page is one request of the pool). The listing ends at the
 * last page the answers give (it may grow while it is read) or at the first empty page. Every page of a window
 * settles before a failure is thrown: no request of the listing outlives it.
 */
async function listInOrder(ctx: RunContext, onPage: (contacts: Contact[]) => Promise<void>): Promise<void> {
  const read = (page: number): Promise<ContactPage> =>
    ctx.request((call) => ctx.services.client.listContacts({ page, size: ADOPT_PAGE_SIZE }, call));
  const first = await read(1);
  await onPage(first.items);
  if (first.items.length === 0) return;
  let last = first.pages;
  const width = Math.max(1, ctx.services.pool.limit);
  for (let next = 2; next <= last; ) {
    const numbers = Array.from({ length: Math.min(width, last - next + 1) }, (_, i) => next + i);
    next += numbers.length;
    const settled = await Promise.allSettled(numbers.map(read));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    for (const s of settled) {
      const page = (s as PromiseFulfilledResult<ContactPage>).value;
      if (page.items.length === 0) return;
      await onPage(page.items);
      last = Math.max(last, page.pages);
    }
  }
}
