/**
 * The platforms of this build, one line each (issue 37, decision 0190): every platform is a module in its own folder
 * (module.ts), and this list is the only place that names them. The tenants file's `platform` schema, the adapters,
 * connect links and their pages, `connect status` and revoke, the public server's platform routes, the API's and
 * the events' enums, the CLI's help and the docs are made from it. A new platform is its folder and a line here.
 */
import type { z } from 'zod';
import { fileModule } from './file/module.js';
import { memoryModule } from './memory/module.js';
import type { PlatformModule } from './module.js';
import { odooModule } from './odoo/module.js';
import { quickBooksModule } from './quickbooks/module.js';
import { xeroModule } from './xero/module.js';
import { zohoBooksModule } from './zoho-books/module.js';

export const PLATFORMS = [fileModule, memoryModule, xeroModule, quickBooksModule, zohoBooksModule, odooModule] as const;

type Module = (typeof PLATFORMS)[number];
/** A platform's kind, as the tenants file names it. */
export type PlatformKind = Module['kind'];
/** A tenant's platform config, whichever its kind (defaults filled in). */
export type PlatformConfig = z.output<Module['config']>;

/** Every kind, in the registry's order (the API's and the docs' enum). */
export const PLATFORM_KINDS = PLATFORMS.map((m) => m.kind) as unknown as readonly [PlatformKind, ...PlatformKind[]];
/** The kinds connected through OAuth (connect links, `connect status`, `connection.changed`). */
export const OAUTH_KINDS = PLATFORMS.filter((m) => m.oauth !== undefined).map((m) => m.kind) as unknown as readonly [PlatformKind, ...PlatformKind[]];

/** The same list, typed for a loop over every platform (each module takes the configs of its own kind). */
export const MODULES: readonly PlatformModule<PlatformConfig>[] = PLATFORMS.map((m) => m as unknown as PlatformModule<PlatformConfig>);

const byKind = new Map<string, PlatformModule<PlatformConfig>>(MODULES.map((m) => [m.kind, m]));

/**
 * The module of a config's kind, typed for that config: the registry's modules differ in their config's type, and a
 * config's `kind` says which module takes it (the tenants file's schema is made from the same list).
 */
export function moduleOf(config: { readonly kind: string }): PlatformModule<PlatformConfig> {
  const m = byKind.get(config.kind);
  if (m === undefined) throw new Error(`unknown platform kind ${JSON.stringify(config.kind)}: this build has ${PLATFORM_KINDS.join(', ')}`);
  return m;
}

/** The module of an OAuth platform's config, or undefined for a platform connected otherwise (files, memory). */
export function oauthOf(config: { readonly kind: string }): (PlatformModule<PlatformConfig> & { oauth: NonNullable<PlatformModule<PlatformConfig>['oauth']> }) | undefined {
  const m = byKind.get(config.kind);
  return m?.oauth === undefined ? undefined : (m as PlatformModule<PlatformConfig> & { oauth: NonNullable<PlatformModule<PlatformConfig>['oauth']> });
}

/** The label people read of a kind (`Xero`, `QuickBooks Online`). */
export function labelOf(kind: string): string {
  return byKind.get(kind)?.label ?? kind;
}
