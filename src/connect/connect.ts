/**
 * Connecting a tenant's Xero organisation or QuickBooks company from a connect link (issue 30, decisions 0140-0142):
 *
 *   GET /connect/<link>     the link verifies (signed, unexpired, a xero/quickbooks tenant): a single-use `state`
 *                           (Redis, 10 minutes, bound to the tenant, with the PKCE verifier) and a redirect to the
 *                           platform's consent screen. Anything else: the public server's one 401.
 *   GET /oauth/callback     the `state` is taken (once; unknown, reused or expired: the one 401). The platform's
 *                           error (access_denied, invalid_scope): a plain page and a log line. Otherwise the code
 *                           is exchanged; Xero's organisations are read (GET /connections) and one is bound (the
 *                           tenants file's, refused when the grant lacks it; the only one; or the customer's pick);
 *                           QuickBooks' realmId comes with the callback (checked against the tenants file's).
 *   GET /oauth/choose/<pick> a signed pick of one organisation of a grant kept 10 minutes (taken once).
 *
 * Binding = the refresh token becomes the first link of the tenant's token chain (PlatformAuth.connect, under the
 * chain's lock: the one store of refresh tokens), the organisation (realm) is recorded beside it (binding.ts), and
 * the tenant's first full run is requested. A refusal changes nothing stored. No token, code, state or verifier is
 * logged, shown or put in a job.
 */
import type { Redis } from 'ioredis';
import { Agent } from 'undici';
import type { TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { BindingStore } from '../platforms/oauth/binding.js';
import { TokenCipher } from '../platforms/oauth/cipher.js';
import { PlatformAuth, QUICKBOOKS_OAUTH, XERO_OAUTH, type PlatformAuthSettings } from '../platforms/oauth/oauth.js';
import { Capabilities } from './capability.js';
import { authorization, exchange, FlowError, xeroConnections, type Grant, type OAuthPlatformConfig } from './flows.js';
import { connectedPage, notConnectedPage, pickPage, reasonText } from './pages.js';
import { PendingStore, PICK_TTL_MS } from './pending.js';

export const CALLBACK_PATH = '/oauth/callback';

export interface ConnectDeps {
  redis: Redis;
  prefix: string;
  /** PLATFORM_TOKEN_KEY: encrypts the chain and what is pending; links are signed under a key derived from it. */
  tokenKey: string;
  /** PUBLIC_URL: links and the redirect URI (`PUBLIC_URL/oauth/callback`) are built on it. */
  publicUrl: string;
  tenant(id: string): TenantConfig | undefined;
  tenants(): readonly TenantConfig[];
  /** Requests the tenant's first full run once it is connected. */
  requestFullSync(tenant: string): Promise<void>;
  logger: Logger;
  /**
   * Told of each connection change this room makes (a link completed: connected; `connect revoke`: revoked), at
   * `at` (epoch ms): the run webhooks' `connection.changed` (docs/run-webhooks.md). Must not throw.
   */
  onChanged?(change: ConnectionChange): Promise<void>;
  /** Counts what became of a callback (connected, refused: the platform's reason). */
  onOutcome?(tenant: string, outcome: 'connected' | 'refused' | 'picking'): void;
  now?: () => number;
  /** The token chain's settings (tests: short lock waits). */
  auth?: Partial<PlatformAuthSettings>;
}

/** A connection change this room made. */
export interface ConnectionChange {
  tenant: string;
  platform: 'xero' | 'quickbooks';
  state: 'connected' | 'revoked';
  connection: string;
  at: number;
  reason?: string;
}

/** What a route answers: a redirect, a page, or the public server's one 401. */
export type ConnectAnswer = { kind: 'redirect'; location: string } | { kind: 'page'; response: Response } | { kind: 'unauthorized' };

type OAuthTenant = TenantConfig & { platform: OAuthPlatformConfig };
const isOAuth = (t: TenantConfig | undefined): t is OAuthTenant => t?.platform.kind === 'xero' || t?.platform.kind === 'quickbooks';
const UNAUTHORIZED: ConnectAnswer = { kind: 'unauthorized' };

/**
 * A connect link for `tenant` (no Redis needed: the link carries its own proof), valid for `ttlMs`; throws for a
 * tenant that is not a xero/quickbooks one.
 */
export function connectLink(o: { tokenKey: string; publicUrl: string; tenant: TenantConfig | undefined }, tenant: string, ttlMs: number, now?: () => number): { url: string; expiresAt: number } {
  if (o.tenant === undefined) throw new Error(`no tenant "${tenant}" in the tenants file`);
  if (!isOAuth(o.tenant)) throw new Error(`tenant "${tenant}" is a ${o.tenant.platform.kind} tenant: only xero and quickbooks tenants are connected with a link`);
  const { token, expiresAt } = new Capabilities(o.tokenKey, now).link(tenant, ttlMs);
  return { url: `${o.publicUrl}/connect/${token}`, expiresAt };
}

export class Connect {
  readonly capabilities: Capabilities;
  readonly bindings: BindingStore;
  readonly redirectUri: string;
  private readonly pending: PendingStore;
  private readonly cipher: TokenCipher;
  private readonly agent = new Agent({ keepAliveTimeout: 10_000, connections: 4, connect: { timeout: 5_000 } });

  constructor(private readonly d: ConnectDeps) {
    this.cipher = TokenCipher.fromText(d.tokenKey);
    this.capabilities = new Capabilities(d.tokenKey, d.now);
    this.bindings = new BindingStore(d.redis, d.prefix);
    this.pending = new PendingStore(d.redis, d.prefix, this.cipher);
    this.redirectUri = `${d.publicUrl}${CALLBACK_PATH}`;
  }

  /** A connect link for `tenant`, valid for `ttlMs`; throws for a tenant that is not a xero/quickbooks one. */
  link(tenant: string, ttlMs: number): { url: string; expiresAt: number } {
    return connectLink({ tokenKey: this.d.tokenKey, publicUrl: this.d.publicUrl, tenant: this.d.tenant(tenant) }, tenant, ttlMs, this.d.now);
  }

  /** `GET /connect/<link>`: to the platform's consent screen, or the one 401. */
  async start(token: string): Promise<ConnectAnswer> {
    const claims = this.capabilities.verifyLink(token);
    const tenant = claims === undefined ? undefined : this.d.tenant(claims.t);
    if (!isOAuth(tenant)) return UNAUTHORIZED;
    const auth = await authorization(tenant.platform, this.redirectUri);
    await this.pending.putState(auth.state, { tenant: tenant.id, verifier: auth.verifier, at: this.now() });
    this.d.logger.info({ tenant: tenant.id, platform: tenant.platform.kind }, 'connect: link opened, sent to the consent screen');
    return { kind: 'redirect', location: auth.url };
  }

  /** `GET /oauth/callback?...`: `url` is the request's URL (its query is what the platform sent). */
  async callback(url: URL): Promise<ConnectAnswer> {
    const state = url.searchParams.get('state');
    if (state === null || state.length > 512) return UNAUTHORIZED;
    const pending = await this.pending.takeState(state);
    const tenant = pending === undefined ? undefined : this.d.tenant(pending.tenant);
    if (pending === undefined || !isOAuth(tenant)) return UNAUTHORIZED;
    const p = tenant.platform;
    const error = url.searchParams.get('error');
    if (error !== null) return this.refused(tenant, error.slice(0, 64), `the platform answered ${error.slice(0, 64)}`);
    let grant: Grant;
    try {
      grant = await exchange(p, this.callbackUrl(url), state, pending.verifier, this.redirectUri);
    } catch (err) {
      if (!(err instanceof FlowError)) throw err;
      return this.refused(tenant, err.reason, err.message, err.requestId);
    }
    if (p.kind === 'quickbooks') {
      const realmId = url.searchParams.get('realmId');
      if (realmId === null || !/^[0-9]{1,32}$/.test(realmId)) return this.refused(tenant, 'no_realm', 'the callback carried no realmId');
      if (p.realmId !== undefined && p.realmId !== realmId) {
        return this.refused(tenant, 'other_company', `the customer connected realm ${realmId}, the tenants file names ${p.realmId}`, undefined, 'You connected a different QuickBooks company from the one this link is for.');
      }
      return this.bind(tenant, realmId, undefined, undefined, grant);
    }
    let orgs;
    try {
      orgs = await xeroConnections(p, grant.accessToken);
    } catch (err) {
      if (!(err instanceof FlowError)) throw err;
      return this.refused(tenant, err.reason, err.message, err.requestId);
    }
    if (p.xeroTenantId !== undefined) {
      const org = orgs.find((o) => o.tenantId === p.xeroTenantId);
      if (org === undefined) {
        return this.refused(tenant, 'other_organisation', `the grant does not include organisation ${p.xeroTenantId} (it has ${orgs.length})`, undefined, 'The access you gave does not include the Xero organisation this link is for. Open the link again and tick that organisation.');
      }
      return this.bind(tenant, org.tenantId, org.name, org.id, grant);
    }
    const only = orgs.length === 1 ? orgs[0] : undefined;
    if (only !== undefined) return this.bind(tenant, only.tenantId, only.name, only.id, grant);
    if (orgs.length === 0) return this.refused(tenant, 'no_organisation', 'the grant includes no organisation', undefined, 'The access you gave includes no Xero organisation.');
    const id = await this.pending.putGrant({ tenant: tenant.id, ...grant, orgs: orgs.map((o) => ({ id: o.tenantId, ...(o.name ? { name: o.name } : {}), connectionId: o.id })) });
    this.d.onOutcome?.(tenant.id, 'picking');
    this.d.logger.info({ tenant: tenant.id, organisations: orgs.length }, 'connect: the grant has several organisations; the customer picks one');
    const choices = orgs.map((o) => ({ name: o.name ?? o.tenantId, href: `${this.d.publicUrl}/oauth/choose/${this.capabilities.pick(tenant.id, id, o.tenantId, PICK_TTL_MS)}` }));
    return { kind: 'page', response: pickPage(choices) };
  }

  /** `GET /oauth/choose/<pick>`: binds the organisation picked (once), or the one 401. */
  async choose(token: string): Promise<ConnectAnswer> {
    const claims = this.capabilities.verifyPick(token);
    const tenant = claims === undefined ? undefined : this.d.tenant(claims.t);
    if (claims === undefined || !isOAuth(tenant) || tenant.platform.kind !== 'xero') return UNAUTHORIZED;
    const grant = await this.pending.takeGrant(claims.p);
    const org = grant?.orgs.find((o) => o.id === claims.o);
    if (grant === undefined || grant.tenant !== tenant.id || org === undefined) return UNAUTHORIZED;
    return this.bind(tenant, org.id, org.name, org.connectionId, grant);
  }

  /** The chain's owner for `connection` (the tenants file's refresh token, if any, is its seed). */
  authFor(tenant: OAuthTenant, connection: string): PlatformAuth {
    const p = tenant.platform;
    return new PlatformAuth({
      platform: p.kind === 'xero' ? XERO_OAUTH : QUICKBOOKS_OAUTH,
      redis: this.d.redis,
      prefix: this.d.prefix,
      connection,
      clientId: p.clientId,
      clientSecret: p.clientSecret,
      refreshToken: p.refreshToken,
      tokenUrl: p.tokenUrl,
      cipher: this.cipher,
      dispatcher: this.agent,
      logger: this.d.logger,
      settings: { ...this.d.auth, ...(p.kind === 'quickbooks' ? { graceMs: 0 } : {}) },
    });
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }

  private async bind(tenant: OAuthTenant, connection: string, name: string | undefined, connectionId: string | undefined, grant: Grant): Promise<ConnectAnswer> {
    const kind = tenant.platform.kind;
    const other = await this.ownerOf(kind, connection, tenant.id);
    if (other !== undefined) {
      return this.refused(tenant, 'taken', `${kind} ${connection} is already the connection of tenant ${other}`, undefined, 'This company is already connected to another account. Ask whoever sent you the link.');
    }
    await this.authFor(tenant, connection).connect(grant);
    const connectedAt = this.now();
    await this.bindings.set(tenant.id, { platform: kind, connection, ...(name ? { name } : {}), ...(connectionId ? { connectionId } : {}), connectedAt });
    await this.d.requestFullSync(tenant.id);
    await this.d.onChanged?.({ tenant: tenant.id, platform: kind, state: 'connected', connection, at: connectedAt });
    this.d.onOutcome?.(tenant.id, 'connected');
    this.d.logger.info({ tenant: tenant.id, platform: kind, connection }, 'connect: connected; the first full run is requested');
    return { kind: 'page', response: connectedPage(kind, name) };
  }

  /** Another tenant of the same platform whose connection is `connection` (in its tenants-file entry or bound). */
  private async ownerOf(kind: 'xero' | 'quickbooks', connection: string, self: string): Promise<string | undefined> {
    for (const t of this.d.tenants()) {
      if (t.id === self || t.platform.kind !== kind) continue;
      const named = t.platform.kind === 'xero' ? t.platform.xeroTenantId : t.platform.kind === 'quickbooks' ? t.platform.realmId : undefined;
      if (named === connection || (await this.bindings.get(t.id))?.connection === connection) return t.id;
    }
    return undefined;
  }

  private refused(tenant: OAuthTenant, reason: string, detail: string, requestId?: string, text?: string): ConnectAnswer {
    this.d.onOutcome?.(tenant.id, 'refused');
    this.d.logger.warn({ tenant: tenant.id, platform: tenant.platform.kind, reason, ...(requestId ? { requestId } : {}) }, `connect: not connected: ${detail}`);
    return { kind: 'page', response: notConnectedPage(tenant.platform.kind, text ?? reasonText(tenant.platform.kind, reason)) };
  }

  /** The callback's URL as the platform was told it (PUBLIC_URL's, not the one the proxy forwarded), with its query. */
  private callbackUrl(url: URL): URL {
    const out = new URL(this.redirectUri);
    out.search = url.search;
    return out;
  }

  private now(): number {
    return (this.d.now ?? Date.now)();
  }
}
