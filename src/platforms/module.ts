/**
 * A platform as a plug-in (issue 37, decision 0190): everything the rest of the worker knows of one platform, in the
 * platform's own folder, listed once in the registry (registry.ts). The tenants file's schema, connect links,
 * `connect status` and revoke, the API's and the events' enums, the CLI's help and the docs loop over the registry;
 * nothing outside a platform's folder names a platform.
 *
 *   kind, label            the tenants file's `platform.kind`; the name people read
 *   config                 the zod schema of a tenant's `platform` object (a strictObject with `kind` its literal)
 *   oauth                  an OAuth platform: its token chain's facts, its limits, how a connect link authorizes,
 *                          exchanges the code and binds a connection (an organisation, a company), and revokes
 *   identities             what two tenants may not share (one app with two secrets; one connection)
 *   check                  problems of a config beyond its schema, against the environment (FILE_PLATFORM_ROOT)
 *   createAdapter          the adapter (which may load the platform's code on its first page)
 *   webhook                a route of the public server the platform posts to (QuickBooks' change notifications)
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Secret } from '../secret.js';
import type { MemoryPlatformRegistry } from './memory/memory-platform.js';
import type { Binding } from './oauth/binding.js';
import type { TokenCipher } from './oauth/cipher.js';
import type { OAuthPlatform, PlatformAuthHooks, PlatformAuthSettings } from './oauth/oauth.js';
import type { PlatformLimits } from './oauth/rate-limiter.js';
import type { PlatformAdapter } from './types.js';

/** What an adapter is built with (the composition root gives each what it has). */
export interface AdapterDeps {
  logger: Logger;
  /** Where `memory` platforms are looked up by name (tests, the demo); the process's registry when absent. */
  memoryPlatforms?: MemoryPlatformRegistry;
  /** OAuth platforms: the fleet's Redis (token chains, limits, bindings). */
  redis?: Redis;
  /** KEY_PREFIX. */
  prefix?: string;
  /** OAuth platforms: the cipher of PLATFORM_TOKEN_KEY (and PLATFORM_TOKEN_KEY_PREVIOUS while a key rotates), or the key's text. */
  tokenKey?: TokenCipher | string;
  /** The tenant's id (its binding: the connection a connect link chose). */
  tenantId?: string;
  /** Told of the token chain's events (a grant refused, a chain no key opens). */
  authHooks?: PlatformAuthHooks;
  /** File: FILE_PLATFORM_ROOT. */
  fileRoot?: string;
  /** Tests: the token chain's settings (short locks). */
  auth?: Partial<PlatformAuthSettings>;
}

/** A platform app (a client id at its token address) and the connection a config names, for the shared-identity checks. */
export interface Identities {
  app?: { key: string; clientId: string; secret: Secret };
  connection?: { id: string; field: string; what: string };
}

/** An OAuth grant from a code exchange (or a refresh): tokens and what came with them. */
export interface Grant {
  refreshToken: string;
  accessToken: string;
  expiresInS: number;
  /** Facts of the token answer a platform keeps with the connection (Zoho's `api_domain`). */
  extra?: Record<string, string>;
}

/** A call a platform makes while connecting (Xero's `GET /connections`): JSON, bounded, never through a tenant's limiter. */
export type ConnectFetch = (url: string, init: { method?: 'GET' | 'DELETE' | 'POST'; headers: Record<string, string>; body?: string }) => Promise<{ status: number; json: unknown; requestId: string | undefined }>;

/** One connection a grant covers: its id (what `connection` names), a name people read, the platform's own id of the grant's link to it. */
export interface ConnectionChoice {
  connection: string;
  name?: string;
  connectionId?: string;
}

/** What a grant binds, after its code exchange. */
export type BindResult =
  | { kind: 'bind'; choice: ConnectionChoice }
  | { kind: 'pick'; choices: ConnectionChoice[] }
  | { kind: 'refuse'; reason: string; detail: string; text?: string; requestId?: string };

/** Where a connect link goes and what it carries: the parts of the authorization request that differ by platform. */
export interface AuthorizeRequest {
  url: string;
  scopes: readonly string[];
  /** How the scopes are joined: RFC 6749's space, or Zoho's comma. */
  separator: ' ' | ',';
  pkce: boolean;
  /** More query parameters (Zoho: access_type=offline, prompt=consent). */
  params?: Record<string, string>;
}

/** What a callback says before anything is sent: where its code is exchanged (Zoho's data centre), or why it is refused. */
export type CallbackCheck = { kind: 'ok'; tokenUrl: string; extra?: Record<string, string> } | { kind: 'refuse'; reason: string; detail: string };

/** An OAuth platform: its token chain, its limits and its connect flow. */
export interface OAuthModule<C> {
  /** Names and rules of the token chain (oauth.ts): `connectionName`, the key context, the support header. */
  readonly chain: OAuthPlatform;
  /** How long a used refresh token is honoured after its successor exists (Xero 30 min; 0: refused at once). */
  readonly graceMs: number;
  /** Client authentication at the token endpoint: HTTP Basic (Xero, Intuit) or the form body (Zoho). */
  readonly clientAuth: 'basic' | 'post';
  /** A refresh token unused this long expires at the platform (for `connect status`'s ageing warning); 0: never. */
  readonly idleLimitDays: number;
  /** The API's limits per connection (shared by every process), and whether they are also the app's (`app`). */
  readonly limits: PlatformLimits & { scope: 'app' | 'connection' };
  /** The answer header that names a request for the platform's support (Xero-Correlation-Id, intuit_tid). */
  readonly requestIdHeader: string;
  /** What one connection is, for people (`organisation`, `company`), and the config field naming it. */
  readonly connectionWord: string;
  readonly connectionField: string;
  credentials(config: C): { clientId: string; clientSecret: Secret; refreshToken: Secret | undefined };
  /** The connection the tenants file names (it then binds only that one), or undefined. */
  connectionOf(config: C): string | undefined;
  /** The token endpoint of a connection (Zoho: its data centre's accounts server, kept with its binding). */
  tokenUrl(config: C, binding: Binding | undefined): string;
  authorize(config: C): AuthorizeRequest;
  /** The callback's own checks (the code's data centre); absent: the config's token endpoint. */
  callback?(config: C, callback: URL): CallbackCheck;
  /** After the code exchange: which connection the grant binds. */
  bind(step: { config: C; callback: URL; grant: Grant; fetch: ConnectFetch }): Promise<BindResult>;
  /** Tells the platform the connection is revoked (`connect revoke`); returns what it said. */
  revoke?(this: void, step: { config: C; binding: Binding | undefined; connection: string; clientSecret: Secret; accessToken: string; refreshToken: string | undefined; fetch: ConnectFetch }): Promise<string>;
}

/**
 * A route of the public server a platform posts to (its change notifications, `POST /webhooks/<path>`); it may only
 * request runs. Served while a tenant's config gives it a secret (`secretOf`); a request without a signature gets
 * the one 401 from its headers alone, and a body is read (at most `maxBodyBytes`) only to be verified.
 */
export interface PlatformWebhook<C> {
  readonly path: string;
  readonly maxBodyBytes: number;
  /** The header carrying the signature over the body. */
  readonly signatureHeader: string;
  /** The secret a tenant's config gives the route, or undefined (its tenants are then not heard). */
  secretOf(config: C): Secret | undefined;
  /**
   * Verifies `body` against the tenants that listen (each with its connection) and says whose runs it requests, the
   * connections it names of no tenant (`ignored`), or why it is refused: not verified (the one 401), not readable (400).
   */
  handle(body: Buffer, signature: string, tenants: readonly { id: string; config: C; connection: string }[]): { kind: 'ok'; tenants: string[]; ignored: string[] } | { kind: 'invalid' } | { kind: 'unreadable'; why: string };
}

export interface PlatformModule<C extends { readonly kind: string } = { readonly kind: string }> {
  readonly kind: C['kind'];
  readonly label: string;
  readonly config: z.ZodType<C, unknown>;
  readonly oauth?: OAuthModule<C>;
  identities?(config: C): Identities;
  /** Problems of a config beyond its schema, each `field: what`, against the settings it depends on. */
  check?(config: C, env: { FILE_PLATFORM_ROOT?: string | undefined }): string[];
  createAdapter(config: C, deps: AdapterDeps): PlatformAdapter;
  readonly webhook?: PlatformWebhook<C>;
  /**
   * A connection not made with a link (credentials in the tenant's config: Odoo's API key): its state as far as Redis
   * knows, for `connect status` and the connection-state metric. OAuth platforms' states come from their token chain.
   */
  connectionState?(config: C, deps: { redis: Redis; prefix: string }): Promise<KeyConnectionState>;
}

/** The state of a connection whose credentials are in the tenant's config. */
export interface KeyConnectionState {
  state: 'connected' | 'awaiting_connection' | 'needs_reconnect';
  connection?: string;
  reason?: string;
  /** What to do next. */
  next?: string;
}
