/**
 * The adapter of an OAuth platform's tenant whose tenants-file entry names no connection (organisation, company): it
 * reads the connection a connect link bound (oauth/binding.ts) before each page, builds the platform's adapter for
 * it, and rebuilds it when a reconnect bound another one. Unbound, every read is PLATFORM_NOT_CONNECTED (the run ends
 * `waiting for connection`).
 */
import type { Entity } from '../glossary.js';
import type { Binding, BindingStore } from './oauth/binding.js';
import { PlatformNotConnectedError, readContactsOf, type Page, type PageRequest, type PlatformAdapter } from './types.js';

export class BoundAdapter implements PlatformAdapter {
  private current: { connection: string; adapter: PlatformAdapter } | undefined;

  constructor(
    readonly kind: string,
    private readonly tenant: string,
    private readonly bindings: BindingStore,
    /** Builds the adapter of a binding (loading the platform's code on the first one). */
    private readonly build: (binding: Binding) => Promise<PlatformAdapter>,
  ) {}

  private async adapter(): Promise<PlatformAdapter> {
    const binding = await this.bindings.get(this.tenant);
    if (binding === undefined || binding.platform !== this.kind) {
      throw new PlatformNotConnectedError(`${this.kind}: tenant ${this.tenant} is not connected yet: make a connect link (collections-sync connect link --tenant ${this.tenant}) and send it to the customer`);
    }
    if (this.current?.connection !== binding.connection) {
      await this.current?.adapter.close?.();
      this.current = { connection: binding.connection, adapter: await this.build(binding) };
    }
    return this.current.adapter;
  }

  async readPage<E extends Entity>(entity: E, req: PageRequest): Promise<Page<E>> {
    return (await this.adapter()).readPage(entity, req);
  }

  async readContacts(ids: readonly string[], signal?: AbortSignal): Promise<Page<'contacts'>> {
    return readContactsOf(await this.adapter(), ids, signal);
  }

  async close(): Promise<void> {
    await this.current?.adapter.close?.();
    this.current = undefined;
  }
}
