/**
 * An adapter whose code is loaded on its first read: a platform module names its adapter without importing it, so
 * what only reads the tenants file (`status`, `connect status`, the CLI's checks) never loads an HTTP client or an
 * OAuth library it does not use. The first read imports and builds the adapter; a failure to build is the read's.
 */
import type { Entity } from '../glossary.js';
import { readContactsOf, type Page, type PageRequest, type PlatformAdapter } from './types.js';

export class LazyAdapter implements PlatformAdapter {
  #loading: Promise<PlatformAdapter> | undefined;

  constructor(
    readonly kind: string,
    private readonly load: () => Promise<PlatformAdapter>,
  ) {}

  private adapter(): Promise<PlatformAdapter> {
    // A failed load is not kept: the next read tries again (a module that failed once to load fails again anyway).
    this.#loading ??= this.load().catch((err: unknown) => {
      this.#loading = undefined;
      throw err;
    });
    return this.#loading;
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    return (await this.adapter()).readPage(entity, req);
  }

  async readContacts(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
    return readContactsOf(await this.adapter(), ids, signal);
  }

  async close(): Promise<void> {
    const loading = this.#loading;
    this.#loading = undefined;
    if (loading === undefined) return;
    const adapter = await loading.catch(() => undefined);
    await adapter?.close?.();
  }
}
