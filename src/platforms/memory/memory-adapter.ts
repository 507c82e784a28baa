/**
 * The `memory` adapter: pages of a `MemoryPlatform` in (updatedAt, id) order (`ordered: true`), like an API
 * platform that sorts by its modification stamp. `since` is inclusive; the page token is the cursor of the last
 * entry of the previous page, continued exclusively, so records sharing a timestamp are split across pages
 * without loss or repeat.
 */
import { decodePageToken, encodePageToken } from '../page-token.js';
import { z } from 'zod';
import type { Entity } from '../../glossary.js';
import { compareCursor, type BadRecord, type Cursor, type Page, type PageRequest, type PlatformAdapter } from '../types.js';
import type { MemoryPlatform, StoredEntry } from './memory-platform.js';

export const MEMORY_DEFAULT_PAGE_SIZE = 500;
export const MEMORY_MAX_PAGE_SIZE = 5_000;

const tokenSchema = z.strictObject({ u: z.string().min(1), i: z.string() });

export function encodeMemoryToken(cursor: Cursor): string {
  return encodePageToken({ u: cursor.updatedAt, i: cursor.id });
}

export function decodeMemoryToken(token: string): Cursor {
  const t = decodePageToken(token, tokenSchema.refine((x) => !Number.isNaN(Date.parse(x.u))), 'memory');
  return { updatedAt: t.u, id: t.i };
}

export class MemoryAdapter implements PlatformAdapter {
  readonly kind = 'memory';

  constructor(readonly store: MemoryPlatform) {}

  /**
   * One page: entries with cursor >= since and > the token's cursor, `pageSize` of them (good and bad count
   * alike). Bad records whose `updatedAt` is unreadable have no place in the order: they are reported on the
   * first page of every listing. A read held with `store.holdNext` waits first; a failure queued with
   * `store.failNext` is thrown first.
   */
  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    req.signal?.throwIfAborted();
    const hold = this.store.takeHold(entity);
    if (hold !== undefined) await hold;
    const failure = this.store.takeFailure(entity);
    if (failure !== undefined) throw failure.error;

    const pageSize = Math.min(Math.max(1, Math.floor(req.pageSize ?? MEMORY_DEFAULT_PAGE_SIZE)), MEMORY_MAX_PAGE_SIZE);
    const after = req.pageToken === undefined ? undefined : decodeMemoryToken(req.pageToken);
    const { ordered, unplaced } = this.store.snapshot(entity);
    const page: Page<E> = { records: [], bad: [], ordered: true };
    if (after === undefined) for (const entry of unplaced) this.add(page, entity, entry);

    let i = firstIndex(ordered, req.since, after);
    const end = Math.min(ordered.length, i + pageSize);
    let last: Cursor | undefined;
    for (; i < end; i++) {
      const entry = ordered[i]!;
      this.add(page, entity, entry);
      last = entry.cursor;
    }
    if (i < ordered.length && last !== undefined) page.nextPageToken = encodeMemoryToken(last);
    return page;
  }

  private add<E extends Entity>(page: Page<E>, entity: E, entry: StoredEntry<E>): void {
    if (entry.check.ok) {
      page.records.push(structuredClone(entry.check.record));
      return;
    }
    const bad: BadRecord = { entity, place: `memory:${entity}#${entry.id}`, platformId: entry.id, reason: entry.check.reason };
    page.bad.push(bad);
  }
}

/** The first index whose cursor is >= since and > after (binary search over the sorted entries). */
function firstIndex(ordered: readonly { cursor: Cursor }[], since: Cursor | undefined, after: Cursor | undefined): number {
  const lowerBound = (pred: (c: Cursor) => boolean): number => {
    let lo = 0;
    let hi = ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pred(ordered[mid]!.cursor)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  const fromSince = since === undefined ? 0 : lowerBound((c) => compareCursor(c, since) >= 0);
  const fromAfter = after === undefined ? 0 : lowerBound((c) => compareCursor(c, after) > 0);
  return Math.max(fromSince, fromAfter);
}
