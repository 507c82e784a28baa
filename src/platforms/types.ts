/**
 * The adapter interface. An adapter yields canonical records of one entity page by page, in a stable order,
 * with a page token to resume from. It knows nothing of the collections service, state or auth.
 */
import type { Entity } from '../glossary.js';
import type { RecordOf } from './records.js';

/** An inclusive position in (updatedAt, id) order. `updatedAt` is ISO 8601 with offset. */
export interface Cursor {
  updatedAt: string;
  id: string;
}

export interface PageRequest {
  /** Records with (updatedAt, id) >= since (the caller has already subtracted the lookback); all when absent. */
  since?: Cursor;
  /** Where to resume: the `nextPageToken` of an earlier page of the same listing (same `since`). */
  pageToken?: string;
  /** A hint; adapters may cap it. */
  pageSize?: number;
  signal?: AbortSignal;
}

/** A record that broke the rules: its place (file:line, or the platform's endpoint and page), id when known, reason. */
export interface BadRecord {
  entity: Entity;
  place: string;
  platformId?: string;
  reason: string;
}

export interface Page<E extends Entity> {
  records: RecordOf[E][];
  bad: BadRecord[];
  /** Absent on the last page. Opaque to the caller; safe to store (no secrets). */
  nextPageToken?: string;
  /**
   * True when the listing is in (updatedAt, id) order, so the last record of a fully pushed page is a safe
   * cursor. False (the `file` adapter: export order) means the cursor may only advance when the listing ends.
   */
  ordered: boolean;
}

export interface PlatformAdapter {
  readonly kind: string;
  /** One page of `entity` modified since `req.since`. Throws `PlatformRateLimitedError` on a rate limit. */
  readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>>;
  /**
   * Contacts by platform id, whatever their stamps: those receivable invoices wait for that no listing yields as
   * customers (a Xero contact flagged a customer after it was last read, or never). Records and bad records, one
   * page, no token. Adapters whose listings hold no contact back leave it out.
   */
  readContacts?(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>>;
  /** Release connections, files, timers. */
  close?(): Promise<void>;
}

/** Stable codes of platform errors; the sync job turns them into queue outcomes. */
/** `adapter.readContacts`, or an empty page for an adapter that cannot read contacts by id (a wrapper's answer for it). */
export async function readContactsOf(adapter: PlatformAdapter, ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
  return adapter.readContacts === undefined ? { records: [], bad: [], ordered: false } : adapter.readContacts(ids, signal);
}

export type PlatformErrorCode = 'PLATFORM_RATE_LIMITED' | 'PLATFORM_AUTH_FAILED' | 'PLATFORM_UNAVAILABLE' | 'PLATFORM_BAD_RESPONSE' | 'PLATFORM_NOT_CONNECTED';

export class PlatformError extends Error {
  constructor(
    readonly code: PlatformErrorCode,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PlatformError';
  }
}

/**
 * The tenant has no connection yet (no refresh token in the tenants file, no connect link completed): its runs end
 * `waiting for connection` instead of failing, and nothing retries until a connect link binds it.
 */
export class PlatformNotConnectedError extends PlatformError {
  constructor(message: string) {
    super('PLATFORM_NOT_CONNECTED', message, false);
    this.name = 'PlatformNotConnectedError';
  }
}

/**
 * A platform rate limit. `scope: 'minute'` means wait `retryAfterMs` and go on; `scope: 'day'` means the
 * tenant's sync is rescheduled for `retryAfterMs` from now, without holding a worker.
 */
export class PlatformRateLimitedError extends PlatformError {
  constructor(
    readonly scope: 'minute' | 'day' | 'concurrent' | 'app',
    readonly retryAfterMs: number,
    message: string,
  ) {
    super('PLATFORM_RATE_LIMITED', message, true);
    this.name = 'PlatformRateLimitedError';
  }
}

/** Compares two cursors in (updatedAt, id) order. */
export function compareCursor(a: Cursor, b: Cursor): number {
  const ta = Date.parse(a.updatedAt);
  const tb = Date.parse(b.updatedAt);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
