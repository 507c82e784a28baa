/** Canonical records for the platform tests. `over` may break them on purpose (even `id`). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Entity } from '../../src/glossary.js';
import type { Page, PageRequest, PlatformAdapter } from '../../src/platforms/types.js';

export type Fixture = { id: string } & Record<string, unknown>;

export function contact(i: number, over: Record<string, unknown> = {}): Fixture {
  return {
    id: `C-${String(i).padStart(6, '0')}`,
    updatedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    name: `Customer ${i}`,
    email: `c${i}@example.com`,
    ...over,
  };
}

export function invoice(i: number, over: Record<string, unknown> = {}): Fixture {
  return {
    id: `INV-${String(i).padStart(6, '0')}`,
    contactId: 'C-000001',
    updatedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    status: 'AUTHORISED',
    number: `INV-${i}`,
    date: '2026-01-01',
    dueDate: '2026-01-31',
    total: 100,
    ...over,
  };
}

export function payment(i: number, over: Record<string, unknown> = {}): Fixture {
  return {
    id: `P-${i}`,
    invoiceId: 'INV-000001',
    updatedAt: '2026-02-01T00:00:00Z',
    amount: 10,
    date: '2026-02-01',
    ...over,
  };
}

export async function tempDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'cs-platforms-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Every page of a listing, following nextPageToken to the end. */
export async function readAll<E extends Entity>(adapter: PlatformAdapter, entity: E, req: Omit<PageRequest, 'pageToken'> = {}): Promise<Page<E>[]> {
  const pages: Page<E>[] = [];
  let pageToken: string | undefined;
  for (let n = 0; n < 100_000; n++) {
    const page: Page<E> = await adapter.readPage(entity, pageToken === undefined ? req : { ...req, pageToken });
    pages.push(page);
    pageToken = page.nextPageToken;
    if (pageToken === undefined) return pages;
  }
  throw new Error('listing did not end');
}
