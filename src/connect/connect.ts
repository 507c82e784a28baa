/**
 * Connecting a tenant's OAuth platform (a Xero organisation, a QuickBooks company, ...) from a connect link (issue 30,
 * decisions 0140-0142), the same for every platform, each platform's module saying what differs (issue 37):
 *
 *   GET /connect/<link>     the link verifies (signed, unexpired, a xero/quickbooks tenant) and is outstanding
 *                           (recorded when made, not spent nor revoked: links.ts; a tenant that has a connection only
 *                           for a link asked for as a reconnect): a single-use `state` (Redis, 10 minutes, bound to
 *                           the tenant and the link, with the PKCE verifier) and a redirect to the platform's consent
 *                           screen. Anything else: the public server's one 401.
 *                           The browser gets a cookie (browser.ts), whose digest the state keeps.
 *   GET /oauth/callback     without the cookie of the browser that opened the link: the one 401. The `state` is
 *                           taken (once; unknown, reused, expired, or another browser's: the one 401). The platform's
 *                           error (access_denied, invalid_scope): a plain page and a log line. Otherwise the
 *                           callback is checked by the platform (Zoho: the data centre it names must be Zoho's), the
 *                           code is exchanged, and the platform's module says which connection the grant binds (Xero:
 *                           its organisations from GET /connections, the tenants file's, the only one, or the
 *                           customer's pick; QuickBooks: the callback's realmId, checked against the tenants file's).
 *   GET /oauth/choose/<pick> a signed pick of one organisation of a grant kept 10 minutes (taken once), from the
 *                           browser that opened the link.
 *
 * Binding = the link is spent (taken from its record: one completion wins), the refresh token becomes the first
 * link of the tenant's token chain (PlatformAuth.connect, under the chain's lock: the one store of refresh tokens),
 * the organisation (realm) is recorded beside it (binding.ts), and the tenant's first full run is requested. A
 * refusal changes nothing stored. No token, code, state, verifier or link is logged, shown or put in a job (a link's
 * id is: it is no secret).
 */
import type { Redis } from 'ioredis';
import { Agent } from 'undici';
import { sameBrowser, browserDigest } from './browser.js';
import type { TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import type { ConnectionChoice, ConnectFetch, Grant, OAuthModule } from '../platforms/module.js';
import { BindingStore, type Binding } from '../platforms/oauth/binding.js';
import { platformAuth } from '../platforms/oauth/chain.js';
import { TokenCipher } from '../platforms/oauth/cipher.js';
import type { PlatformAuth, PlatformAuthSettings } from '../platforms/oauth/oauth.js';
import { limiterFor } from '../platforms/oauth/rate-limiter.js';
import { labelOf, OAUTH_KINDS, oauthOf, type PlatformConfig, type PlatformKind } from '../platforms/registry.js';
import { Capabilities } from './capability.js';
import { MinuteLimiter } from '../http-server.js';
import { authorization, connectFetch, exchange, FlowError } from './flows.js';
import { LinkStore } from './links.js';
import { connectedPage, notConnectedPage, pickPage, reasonText, tooManyPage } from './pages.js';
import { PendingStore, PICK_TTL_MS } from './pending.js';
import { hasConnection } from './status.js';

export const CALLBACK_PATH = '/oauth/callback';

export interface ConnectDeps {
  redis: Redis;
  prefix: string;
  /** PLATFORM_TOKEN_KEY: encrypts the chain and what is pending; links are signed under a key derived from it. */
  tokenKey: string;
  /** PLATFORM_TOKEN_KEY_PREVIOUS (a rotation): what it sealed or signed is still read. */
  previousTokenKey?: string | undefined;
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
  /**
   * How often one link may be opened a minute in this process (CONNECT_RATE_PER_MIN; default 30): each opening keeps
   * a state in Redis for 10 minutes, so a link's holder cannot fill Redis with them. More openings get 429.
   */
  openingsPerMin?: number;
  /** The token chain's settings (tests: short lock waits). */
  auth?: Partial<PlatformAuthSettings>;
}

/** A connection change this room made. */
export interface ConnectionChange {
  tenant: string;
  /** The platform's kind (an OAuth platform's). */
  platform: PlatformKind;
  state: 'connected' | 'revoked';
  connection: string;
  at: number;
  reason?: string;
}

/** What a route answers: a redirect, a page, or the public server's one 401. */
export type ConnectAnswer = { kind: 'redirect'; location: string } | { kind: 'page'; response: Response } | { kind: 'unauthorized' };

/** A tenant of an OAuth platform, with its platform's OAuth module. */
type OAuthTenant = TenantConfig & { oauth: OAuthModule<PlatformConfig> };
const oauthTenant = (t: TenantConfig | undefined): OAuthTenant | undefined => {
  const m = t === undefined ? undefined : oauthOf(t.platform);
  return t === undefined || m === undefined ? undefined : { ...t, oauth: m.oauth };
};
const UNAUTHORIZED: ConnectAnswer = { kind: 'unauthorized' };

/** A link refused when it is made: the tenant has a connection and the link was not asked for as a reconnect. */
export class LinkRefusedError extends Error {
  readonly code = 'ALREADY_CONNECTED';
  constructor(message: string) {
    super(message);
    this.name = 'LinkRefusedError';
  }
}

/** A link as made: the URL to send (never logged, never kept), its id (to revoke it) and terms. */
export interface MadeLink {
  url: string;
  id: string;
  expiresAt: number;
  reconnect: boolean;
}

export interface LinkOptions {
  ttlMs: number;
  /** May replace the tenant's connection (another organisation included); without it a tenant that has one is refused. */
  reconnect?: boolean;
  /** Who asks: `cli`, or `api:<key name>` (kept with the record, for `connect status`). */
  by: string;
}

/**
 * A connect link for `tenant`, valid for `ttlMs`, recorded as outstanding (links.ts). Throws for a tenant that is not
 * a xero/quickbooks one, and LinkRefusedError for a tenant that has a connection when `reconnect` is not asked for.
 */
export async function makeConnectLink(
  d: { redis: Redis; prefix: string; tokenKey: string; publicUrl: string; tenant: TenantConfig | undefined; now?: () => number },
  tenant: string,
  o: LinkOptions,
): Promise<MadeLink> {
  if (d.tenant === undefined) throw new Error(`no tenant "${tenant}" in the tenants file`);
  if (oauthTenant(d.tenant) === undefined) throw new Error(`tenant "${tenant}" is a ${d.tenant.platform.kind} tenant: only ${OAUTH_KINDS.join(', ')} tenants are connected with a link`);
  const reconnect = o.reconnect === true;
  if (!reconnect && (await hasConnection(d.redis, d.prefix, d.tenant))) {
    throw new LinkRefusedError(`tenant "${tenant}" already has a ${d.tenant.platform.kind} connection: a link would replace it (another organisation included); ask for a reconnect link if that is meant`);
  }
  const now = d.now ?? Date.now;
  const made = new Capabilities(d.tokenKey, now).link(tenant, o.ttlMs);
  await new LinkStore(d.redis, d.prefix, now).add(tenant, { id: made.id, expiresAt: made.expiresAt, reconnect, createdAt: now(), by: o.by.slice(0, 120) });
  return { url: `${d.publicUrl}/connect/${made.token}`, id: made.id, expiresAt: made.expiresAt, reconnect };
}

export class Connect {
  readonly capabilities: Capabilities;
  readonly bindings: BindingStore;
  readonly links: LinkStore;
  readonly redirectUri: string;
  private readonly pending: PendingStore;
  private readonly cipher: TokenCipher;
  private readonly openings: MinuteLimiter;
  private readonly agent = new Agent({ keepAliveTimeout: 10_000, connections: 4, connect: { timeout: 5_000 } });

  constructor(private readonly d: ConnectDeps) {
    this.cipher = TokenCipher.fromText(d.tokenKey, d.previousTokenKey);
    this.capabilities = new Capabilities(d.tokenKey, d.now, d.previousTokenKey);
    this.bindings = new BindingStore(d.redis, d.prefix);
    this.links = new LinkStore(d.redis, d.prefix, d.now);
    this.pending = new PendingStore(d.redis, d.prefix, this.cipher);
    this.redirectUri = `${d.publicUrl}${CALLBACK_PATH}`;
    this.openings = new MinuteLimiter(d.openingsPerMin ?? 30);
  }

  /** A connect link for `tenant` (makeConnectLink). */
  link(tenant: string, o: LinkOptions): Promise<MadeLink> {
    return makeConnectLink({ redis: this.d.redis, prefix: this.d.prefix, tokenKey: this.d.tokenKey, publicUrl: this.d.publicUrl, tenant: this.d.tenant(tenant), ...(this.d.now ? { now: this.d.now } : {}) }, tenant, o);
  }

  /**
   * `GET /connect/<link>`: to the platform's consent screen, or the one 401: a link that does not verify, is not
   * outstanding (spent, revoked, never recorded), or is not a reconnect link while the tenant has a connection.
   */
  async start(token: string, browser: string): Promise<ConnectAnswer> {
    const claims = this.capabilities.verifyLink(token);
    const tenant = claims === undefined ? undefined : oauthTenant(this.d.tenant(claims.t));
    if (claims === undefined || tenant === undefined) return UNAUTHORIZED;
    const link = await this.links.get(tenant.id, claims.n);
    if (link === undefined) return UNAUTHORIZED;
    if (!link.reconnect && (await hasConnection(this.d.redis, this.d.prefix, tenant))) return UNAUTHORIZED;
    const wait = this.openings.take(`${tenant.id}:${link.id}`);
    if (wait > 0) return { kind: 'page', response: tooManyPage(wait) };
    const auth = await authorization(tenant.oauth, tenant.platform, this.redirectUri);
    await this.pending.putState(auth.state, { tenant: tenant.id, link: link.id, reconnect: link.reconnect, browser: browserDigest(browser), verifier: auth.verifier, at: this.now() });
    this.d.logger.info({ tenant: tenant.id, platform: tenant.platform.kind, link: link.id }, 'connect: link opened, sent to the consent screen');
    return { kind: 'redirect', location: auth.url };
  }

  /**
   * `GET /oauth/callback?...`: `url` is the request's URL (its query is what the platform sent); `browser` the value of
   * the browser's cookie (undefined: none), which must be the one of the browser that opened the link.
   */
  async callback(url: URL, browser: string | undefined): Promise<ConnectAnswer> {
    const state = url.searchParams.get('state');
    if (state === null || state.length > 512 || browser === undefined) return UNAUTHORIZED;
    const pending = await this.pending.takeState(state);
    const tenant = pending === undefined ? undefined : oauthTenant(this.d.tenant(pending.tenant));
    if (pending === undefined || tenant === undefined) return UNAUTHORIZED;
    if (!sameBrowser(browser, pending.browser)) return this.otherBrowser(tenant, pending.link, 'callback');
    const { oauth, platform: p } = tenant;
    const link = { id: pending.link, reconnect: pending.reconnect, browser: pending.browser };
    const error = url.searchParams.get('error');
    if (error !== null) return this.refused(tenant, error.slice(0, 64), `the platform answered ${error.slice(0, 64)}`);
    // Where the code is exchanged: the platform's token endpoint, or the data centre the callback names once the
    // platform has checked it (nothing is sent to one it does not trust).
    const check = oauth.callback?.(p, url) ?? { kind: 'ok' as const, tokenUrl: oauth.tokenUrl(p, undefined) };
    if (check.kind === 'refuse') return this.refused(tenant, check.reason, check.detail);
    let grant: Grant;
    let bound: Awaited<ReturnType<OAuthModule<PlatformConfig>['bind']>>;
    try {
      const exchanged = await exchange(oauth, p, this.callbackUrl(url), state, pending.verifier, this.redirectUri, check.tokenUrl);
      grant = { ...exchanged, extra: { ...check.extra, ...exchanged.extra } };
      bound = await oauth.bind({ config: p, callback: url, grant, fetch: this.fetchFor(tenant) });
    } catch (err) {
      if (!(err instanceof FlowError)) throw err;
      return this.refused(tenant, err.reason, err.message, err.requestId);
    }
    if (bound.kind === 'refuse') return this.refused(tenant, bound.reason, bound.detail, bound.requestId, bound.text);
    if (bound.kind === 'bind') return this.bind(tenant, link, bound.choice, grant);
    const { choices } = bound;
    const id = await this.pending.putGrant({ tenant: tenant.id, link: link.id, reconnect: link.reconnect, browser: link.browser, ...grant, orgs: choices.map((c) => ({ id: c.connection, ...(c.name ? { name: c.name } : {}), ...(c.connectionId ? { connectionId: c.connectionId } : {}) })) });
    this.d.onOutcome?.(tenant.id, 'picking');
    this.d.logger.info({ tenant: tenant.id, organisations: choices.length }, `connect: the grant has several ${oauth.connectionWord}s; the customer picks one`);
    const options = choices.map((c) => ({ name: c.name ?? c.connection, href: `${this.d.publicUrl}/oauth/choose/${this.capabilities.pick(tenant.id, id, c.connection, PICK_TTL_MS)}` }));
    return { kind: 'page', response: pickPage(labelOf(p.kind), oauth.connectionWord, options) };
  }

  /** `GET /oauth/choose/<pick>`: binds the organisation picked (once, from the browser that opened the link), or the one 401. */
  async choose(token: string, browser: string | undefined): Promise<ConnectAnswer> {
    const claims = this.capabilities.verifyPick(token);
    const tenant = claims === undefined ? undefined : oauthTenant(this.d.tenant(claims.t));
    if (claims === undefined || browser === undefined || tenant === undefined) return UNAUTHORIZED;
    const grant = await this.pending.takeGrant(claims.p);
    const org = grant?.orgs.find((o) => o.id === claims.o);
    if (grant === undefined || grant.tenant !== tenant.id || org === undefined) return UNAUTHORIZED;
    if (!sameBrowser(browser, grant.browser)) return this.otherBrowser(tenant, grant.link, 'pick');
    const choice: ConnectionChoice = { connection: org.id, ...(org.name ? { name: org.name } : {}), ...(org.connectionId ? { connectionId: org.connectionId } : {}) };
    const { refreshToken, accessToken, expiresInS, extra } = grant;
    return this.bind(tenant, { id: grant.link, reconnect: grant.reconnect }, choice, { refreshToken, accessToken, expiresInS, ...(extra ? { extra } : {}) });
  }

  /** The chain's owner for `connection` (the tenants file's refresh token, if any, is its seed); built where every chain is. */
  authFor(tenant: TenantConfig, connection: string, binding?: Binding): PlatformAuth {
    const t = oauthTenant(tenant);
    if (t === undefined) throw new Error(`tenant "${tenant.id}" is a ${tenant.platform.kind} tenant: it has no token chain`);
    return platformAuth(t.oauth, t.platform, connection, binding, { redis: this.d.redis, prefix: this.d.prefix, cipher: this.cipher, dispatcher: this.agent, logger: this.d.logger, settings: this.d.auth });
  }

  /** The calls a platform makes while connecting or revoking, through its shared limiter (the app's limits count them). */
  fetchFor(tenant: OAuthTenant): ConnectFetch {
    const limiter = limiterFor({ kind: tenant.oauth.chain.kind, limits: tenant.oauth.limits }, this.d.redis, this.d.prefix, 'connect', tenant.oauth.credentials(tenant.platform).clientId);
    return connectFetch(this.agent, tenant.oauth.requestIdHeader, () => limiter.acquire());
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }

  /**
   * Connects `connection` for the tenant with the grant, spending the link: refused (a page, nothing stored) when
   * another tenant has the organisation, when the tenant got a connection meanwhile and the link is no reconnect
   * link, or when the link was spent or revoked meanwhile. A reconnect that moves the tenant to another organisation
   * deletes the old organisation's chain (its tokens are of no further use here).
   */
  private async bind(tenant: OAuthTenant, link: { id: string; reconnect: boolean }, choice: ConnectionChoice, grant: Grant): Promise<ConnectAnswer> {
    const kind = tenant.platform.kind;
    const { connection, name, connectionId } = choice;
    const other = await this.ownerOf(kind, connection, tenant.id);
    if (other !== undefined) {
      return this.refused(tenant, 'taken', `${kind} ${connection} is already the connection of tenant ${other}`, undefined, 'This company is already connected to another account. Ask whoever sent you the link.');
    }
    const spentText = 'This link was already used, or withdrawn. Ask whoever sent it for a new one.';
    if (!link.reconnect && (await hasConnection(this.d.redis, this.d.prefix, tenant))) {
      return this.refused(tenant, 'already_connected', `the tenant got a connection while link ${link.id} was open, and it is no reconnect link`, undefined, spentText);
    }
    const spent = await this.links.take(tenant.id, link.id);
    if (spent === undefined) return this.refused(tenant, 'link_spent', `link ${link.id} was spent or revoked while it was open`, undefined, spentText);
    const before = await this.bindings.get(tenant.id);
    let connectedAt: number;
    try {
      const extra = grant.extra !== undefined && Object.keys(grant.extra).length > 0 ? { extra: grant.extra } : {};
      const binding: Binding = { platform: kind, connection, ...(name ? { name } : {}), ...(connectionId ? { connectionId } : {}), ...extra, connectedAt: this.now() };
      await this.authFor(tenant, connection, binding).connect(grant);
      connectedAt = binding.connectedAt;
      await this.bindings.set(tenant.id, binding);
    } catch (err) {
      // Not connected: the link was not used.
      await this.links.restore(tenant.id, spent).catch(() => undefined);
      throw err;
    }
    if (before !== undefined && before.platform === kind && before.connection !== connection) {
      await this.authFor(tenant, before.connection, before).disconnect().catch((err: unknown) => this.d.logger.warn({ tenant: tenant.id, connection: before.connection, err: (err as Error).message }, 'connect: the old organisation\'s token chain could not be deleted'));
    }
    await this.d.requestFullSync(tenant.id);
    await this.d.onChanged?.({ tenant: tenant.id, platform: kind, state: 'connected', connection, at: connectedAt });
    this.d.onOutcome?.(tenant.id, 'connected');
    this.d.logger.info({ tenant: tenant.id, platform: kind, connection, link: link.id, ...(before !== undefined && before.connection !== connection ? { replaced: before.connection } : {}) }, 'connect: connected; the link is spent; the first full run is requested');
    return { kind: 'page', response: connectedPage(labelOf(kind), name) };
  }

  /** Another tenant of the same platform whose connection is `connection` (in its tenants-file entry or bound). */
  private async ownerOf(kind: PlatformKind, connection: string, self: string): Promise<string | undefined> {
    for (const t of this.d.tenants()) {
      if (t.id === self || t.platform.kind !== kind) continue;
      const named = oauthOf(t.platform)?.oauth.connectionOf(t.platform);
      if (named === connection || (await this.bindings.get(t.id))?.connection === connection) return t.id;
    }
    return undefined;
  }

  /**
   * A callback (pick) from another browser than the one that opened the link: someone sent the consent screen (the
   * page of picks) to another person. The one 401; the state (grant) is spent; a warning names the tenant and link.
   */
  private otherBrowser(tenant: OAuthTenant, link: string, what: 'callback' | 'pick'): ConnectAnswer {
    this.d.onOutcome?.(tenant.id, 'refused');
    this.d.logger.warn({ tenant: tenant.id, platform: tenant.platform.kind, link, reason: 'other_browser' }, `connect: a ${what} came from another browser than the one that opened the link; refused`);
    return UNAUTHORIZED;
  }

  private refused(tenant: OAuthTenant, reason: string, detail: string, requestId?: string, text?: string): ConnectAnswer {
    this.d.onOutcome?.(tenant.id, 'refused');
    this.d.logger.warn({ tenant: tenant.id, platform: tenant.platform.kind, reason, ...(requestId ? { requestId } : {}) }, `connect: not connected: ${detail}`);
    return { kind: 'page', response: notConnectedPage(labelOf(tenant.platform.kind), text ?? reasonText(labelOf(tenant.platform.kind), reason)) };
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
