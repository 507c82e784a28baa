/**
 * OAuth 2.0 with rotating refresh tokens for one platform connection (a Xero organisation, a QuickBooks company),
 * shared by every process through Redis (token-store.ts), tokens encrypted at rest (cipher.ts).
 *
 * The platforms' rules: an access token lives 30 minutes (Xero) or an hour (QuickBooks); the refresh token rotates
 * on use. Xero honours a refresh token whose successor was never used for 30 minutes (the grace, `graceMs`);
 * QuickBooks refuses a replaced refresh token (`graceMs: 0`). So:
 * - One refresh at a time per connection across all processes: a Redis lock (lock.ts); whoever gets it re-reads the
 *   stored tokens first (another process may have just rotated them) and only then calls the token endpoint.
 * - The rotated refresh token is committed (Lua, fenced by the lock owner and the version read) before the new
 *   access token is handed out or the new refresh token is ever sent.
 * - A save lost after the answer: with a grace, the uncommitted rotation is dropped and the stored refresh token,
 *   whose successor was never used, is sent again (Xero honours it). Without one, dropping it would lose the chain,
 *   so it is landed on the version it was read from, lock or not (no other process can hold a newer token of that
 *   chain), retried while Redis refuses, and kept in the process until it lands (docs/decisions/0055). A process
 *   killed between the answer and the save loses it: the next refresh gets invalid_grant.
 * - If the platform refuses the stored refresh token while the previous one is within the grace, the previous one
 *   is tried once. A final `invalid_grant` marks the connection revoked in Redis (every process then fails fast,
 *   without calling the token endpoint) until a new refresh token appears in the tenants file.
 * - The token call's timeout is well under the lock's TTL, and the lock is re-checked just before the call.
 */
import type { Redis } from 'ioredis';
import * as oauth from 'oauth4webapi';
import type { Logger } from 'pino';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import type { Secret } from '../../secret.js';
import { isLoopbackHost } from '../../urls.js';
import { RedisLock } from '../../redis/lock.js';
import { retry, type RetryPolicy } from '../../retry.js';
import { PlatformError, PlatformNotConnectedError } from '../types.js';
import { errorName } from '../wire.js';
import type { TokenCipher } from './cipher.js';
import { PlatformTokenStore, type StoredState, type StoredTokens } from './token-store.js';

/** What differs between platforms, besides settings: names in keys, logs and messages (each platform's module gives it). */
export interface OAuthPlatform {
  /** The platform's kind: the first word of its keys and log lines. */
  kind: string;
  /** What one connection is, for messages: `Xero organisation`, `QuickBooks company (realmId)`. */
  connectionName: string;
  /** How the operator reconnects, for the revoked-grant message: `Reconnect the app <this>`. */
  reconnectWhere: string;
  /** The additional data a stored token is bound to (Xero's is `<org>:<refresh|access>`, as it always was). */
  context(this: void, connection: string, kind: 'refresh' | 'access'): string;
  /** The answer header the platform's support asks for (`intuit_tid`), named in every token endpoint failure. */
  supportHeader?: string;
  /**
   * The token endpoint's `error` values that mean the refresh token is gone for good (revoked, expired): RFC 6749's
   * `invalid_grant`, and a platform's own word for it (Zoho's `invalid_code`).
   */
  revokedErrors?: readonly string[];
}

export interface PlatformAuthSettings {
  /** Timeout of one token call (must stay well under `lockTtlMs`). Default 10 s. */
  requestTimeoutMs: number;
  /** TTL of the refresh lock. Default 30 s. */
  lockTtlMs: number;
  /** How long a caller waits for another process's refresh before giving up (retryable). Default 45 s. */
  lockWaitMs: number;
  /** How long after its use a previous refresh token is still tried (Xero allows 30 minutes): default 25 min. 0: the platform refuses it (QuickBooks). */
  graceMs: number;
  /** Without a grace: tries to land a rotation whose save was lost, before it is kept in the process. Default 5. */
  saveAttempts: number;
  /** An access token is replaced this long before it expires (at most a quarter of its lifetime). Default 60 s. */
  accessMarginMs: number;
}

export const DEFAULT_AUTH_SETTINGS: PlatformAuthSettings = {
  requestTimeoutMs: 10_000,
  lockTtlMs: 30_000,
  lockWaitMs: 45_000,
  graceMs: 25 * 60_000,
  saveAttempts: 5,
  accessMarginMs: 60_000,
};

/** Test seams: what happens around the token call (a test kills the process between answer and commit). */
export interface PlatformAuthHooks {
  afterTokenResponse?(): Promise<void> | void;
  /** The platform refused the grant and this process marked the chain revoked (once per revocation). */
  onRevoked?(r: { connection: string; at: number; reason: string }): void;
  /** The stored chain cannot be decrypted with this worker's keys, and this process marked it so (once per chain). */
  onUndecryptable?(r: { connection: string; at: number; reason: string }): void;
  /** A chain marked undecryptable decrypts again (the old key given back), and this process cleared the mark (once). */
  onReadable?(r: { connection: string; at: number }): void;
}

export interface PlatformAuthOptions {
  platform: OAuthPlatform;
  redis: Redis;
  prefix: string;
  /** The connection's owner id in Redis keys (the Xero tenant id, the QuickBooks realm id). */
  connection: string;
  clientId: string;
  clientSecret: Secret;
  /**
   * The tenants file's refresh token: the start of the chain (used only until the first rotation). Absent: the
   * chain starts from a connect link (`connect`); until then every token request is PLATFORM_NOT_CONNECTED.
   */
  refreshToken?: Secret | undefined;
  tokenUrl: string;
  /** How the app authenticates at the token endpoint: HTTP Basic (default), or client_id and client_secret in the form (Zoho). */
  clientAuth?: 'basic' | 'post';
  cipher: TokenCipher;
  dispatcher: Dispatcher;
  logger?: Logger;
  settings?: Partial<PlatformAuthSettings>;
  hooks?: PlatformAuthHooks;
}

export interface AccessToken {
  token: string;
  /** The stored version it belongs to: pass it back as `rejected` when the platform answers 401 with it. */
  version: number;
}

/** A rotation the platform made whose save was lost: kept until it lands (platforms without a grace). */
interface Unsaved {
  /** The refresh token it was made from, and the new state. */
  used: string;
  next: StoredState;
  accessToken: string;
}

type TokenCall =
  | { kind: 'ok'; accessToken: string; refreshToken: string; expiresInS: number }
  | { kind: 'invalid_grant'; detail: string };

/** Waiting for another process's refresh: a poll every 50-100 ms (equal jitter on 100 ms), within `lockWaitMs`. */
const LOCK_WAIT: Omit<RetryPolicy, 'deadlineMs' | 'retryable'> = { retries: Infinity, baseMs: 100, capMs: 100, jitter: 'equal' };

/** Landing a rotation whose save was lost: waits of 100, 200, 400, ... ms (equal jitter), at most 2 s. */
const LAND_WAIT: Omit<RetryPolicy, 'retries' | 'retryable'> = { baseMs: 100, capMs: 2_000, jitter: 'equal' };

/** Another process holds the refresh lock (retried until `lockWaitMs`). */
class LockBusy extends Error {}
/** A stored token that neither PLATFORM_TOKEN_KEY nor PLATFORM_TOKEN_KEY_PREVIOUS decrypts (decision 0163). */
class ChainUndecryptable extends PlatformError {}
/** A landing attempt Redis refused or lost to a concurrent write (retried `saveAttempts` times). */
class NotLanded extends Error {}

export class PlatformAuth {
  readonly store: PlatformTokenStore;
  private readonly settings: PlatformAuthSettings;
  private readonly seedFingerprint: string | undefined;
  /** The file token's fingerprint under the key being rotated out (undefined: no rotation). */
  private readonly previousSeedFingerprint: string | undefined;
  private readonly name: string;
  private seedChecked = false;
  private inflight: Promise<AccessToken> | undefined;
  private unsaved: Unsaved | undefined;

  constructor(private readonly options: PlatformAuthOptions) {
    this.settings = { ...DEFAULT_AUTH_SETTINGS, ...options.settings };
    this.name = options.platform.kind;
    this.store = new PlatformTokenStore(options.redis, options.prefix, this.name, options.connection);
    this.seedFingerprint = options.refreshToken === undefined ? undefined : options.cipher.fingerprint(options.refreshToken.reveal());
    this.previousSeedFingerprint = options.refreshToken === undefined ? undefined : options.cipher.previousFingerprint(options.refreshToken.reveal());
  }

  /**
   * A valid access token. `rejected`: the version whose token the platform just refused (401); a newer stored
   * token is used as it is, and only that version triggers a refresh (so a burst of 401s makes one refresh).
   */
  async accessToken(rejected?: number): Promise<AccessToken> {
    try {
      return await this.accessTokenOnce(rejected);
    } catch (err) {
      if (err instanceof ChainUndecryptable) await this.noteUndecryptable(err.message);
      throw err;
    }
  }

  private async accessTokenOnce(rejected: number | undefined): Promise<AccessToken> {
    if (this.unsaved) {
      const landed = await this.land(this.unsaved);
      if (landed && landed.version !== rejected) return landed;
    }
    const stored = await this.load();
    if (stored.undecryptable !== undefined) await this.noteReadable(stored);
    const usable = this.usable(stored, rejected);
    if (usable) return this.underPrevious(stored) ? ((await this.reseal(stored, usable)) ?? usable) : usable;
    this.inflight ??= this.refreshShared(rejected).finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /**
   * The chain cannot be decrypted with this worker's keys (PLATFORM_TOKEN_KEY rotated without
   * PLATFORM_TOKEN_KEY_PREVIOUS, or another key): marked in Redis, so status says needs_reconnect, and told once
   * (the process whose mark landed calls onUndecryptable). Never throws: the run fails with the decryption's error.
   */
  private async noteUndecryptable(reason: string): Promise<void> {
    const at = Date.now();
    try {
      if (await this.store.markUndecryptable({ at, reason })) {
        this.options.logger?.error({ connection: this.options.connection }, `${this.name}: the stored token chain cannot be decrypted with PLATFORM_TOKEN_KEY or PLATFORM_TOKEN_KEY_PREVIOUS; marked needs_reconnect`);
        this.options.hooks?.onUndecryptable?.({ connection: this.options.connection, at, reason });
      }
    } catch (err) {
      this.options.logger?.warn({ connection: this.options.connection, reason: errorName(err) }, `${this.name}: could not mark the token chain undecryptable`);
    }
  }

  /** A chain marked undecryptable: when its refresh token decrypts now (the old key given back), the mark goes, told once. */
  private async noteReadable(stored: StoredTokens): Promise<void> {
    if (this.options.cipher.openedBy(stored.state.cur, this.options.platform.context(this.options.connection, 'refresh')) === undefined) return;
    if (await this.store.clearUndecryptable()) {
      this.options.logger?.info({ connection: this.options.connection }, `${this.name}: the token chain decrypts again; its needs_reconnect mark is cleared`);
      this.options.hooks?.onReadable?.({ connection: this.options.connection, at: Date.now() });
    }
  }

  /** Whether any token of the chain is sealed under the key being rotated out (PLATFORM_TOKEN_KEY_PREVIOUS). */
  private underPrevious(stored: StoredTokens): boolean {
    const { cipher, platform, connection } = this.options;
    if (!cipher.rotating) return false;
    const s = stored.state;
    const by = (box: string | undefined, kind: 'refresh' | 'access'): boolean => box !== undefined && cipher.openedBy(box, platform.context(connection, kind)) === 'previous';
    return by(s.cur, 'refresh') || by(s.prev, 'refresh') || by(s.access, 'access');
  }

  /**
   * Seals the chain again under PLATFORM_TOKEN_KEY (its tokens unchanged, no platform call), if its refresh lock is
   * free and nobody wrote meanwhile; else it is left for the next use. `usable`'s access token, with the new version.
   */
  private async reseal(stored: StoredTokens, usable: AccessToken): Promise<AccessToken | undefined> {
    const lock = new RedisLock(this.options.redis, this.store.lockKey, this.settings.lockTtlMs);
    if (!(await lock.acquire())) return undefined;
    try {
      const s = stored.state;
      const again = (box: string, kind: 'refresh' | 'access'): string => this.encrypt(this.decrypt(box, kind), kind);
      const next: StoredState = { ...s, cur: again(s.cur, 'refresh'), ...(s.prev !== undefined ? { prev: again(s.prev, 'refresh') } : {}), ...(s.access !== undefined ? { access: again(s.access, 'access') } : {}) };
      const written = await this.store.commit(stored.version, lock.owner, next);
      if (!written.ok) return undefined;
      this.options.logger?.info({ connection: this.options.connection, version: written.version }, `${this.name}: token chain sealed again under PLATFORM_TOKEN_KEY (it was under PLATFORM_TOKEN_KEY_PREVIOUS)`);
      return { token: usable.token, version: written.version };
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  private usable(stored: StoredTokens, rejected: number | undefined): AccessToken | undefined {
    const { state } = stored;
    if (state.revoked) throw this.revokedError(state.revoked.reason);
    if (state.access === undefined || state.accessUntil === undefined) return undefined;
    if (state.accessUntil <= Date.now() || stored.version === rejected) return undefined;
    return { token: this.decrypt(state.access, 'access'), version: stored.version };
  }

  /** The stored tokens, seeding them from the tenants file first when needed. */
  private async load(): Promise<StoredTokens> {
    let stored = await this.read();
    const fromFile = this.options.refreshToken;
    if (fromFile === undefined || this.seedFingerprint === undefined) {
      if (stored !== undefined) return stored;
      throw new PlatformNotConnectedError(`${this.name}: ${this.options.platform.connectionName} ${this.options.connection} is not connected yet: make a connect link (collections-sync connect link --tenant <id>) and send it to the customer`);
    }
    if (stored === undefined || (stored.seed !== this.seedFingerprint && !this.seedChecked)) {
      const initial: StoredState = { cur: this.encrypt(fromFile.reveal(), 'refresh'), rotations: 0 };
      const outcome = await this.store.seed(this.seedFingerprint, initial, this.previousSeedFingerprint);
      this.seedChecked = true;
      if (outcome === 2) this.options.logger?.warn({ connection: this.options.connection }, `${this.name}: a new refresh token in the tenants file restarted the token chain`);
      stored = await this.read();
      if (stored === undefined) throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the token state vanished from Redis while seeding it`, true);
    }
    return stored;
  }

  /**
   * Starts the chain again from an authorization-code exchange (a connect link): its first link, written under the
   * chain's refresh lock, so no rotation of the old chain lands over it. A revoked mark goes with the old chain.
   */
  async connect(grant: { refreshToken: string; accessToken: string; expiresInS: number }): Promise<{ version: number }> {
    const lock = new RedisLock(this.options.redis, this.store.lockKey, this.settings.lockTtlMs);
    if (!(await lock.acquireWithin(this.settings.lockWaitMs))) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: another process has held the token refresh lock too long; the connection was not saved`, true);
    }
    try {
      const now = Date.now();
      const lifeMs = grant.expiresInS * 1000;
      const state: StoredState = {
        cur: this.encrypt(grant.refreshToken, 'refresh'),
        access: this.encrypt(grant.accessToken, 'access'),
        accessUntil: now + lifeMs - Math.min(this.settings.accessMarginMs, lifeMs / 4),
        rotatedAt: now,
        connectedAt: now,
        rotations: 0,
      };
      const marker = `connect-${this.options.cipher.fingerprint(grant.refreshToken)}`;
      const written = await this.store.connect(lock.owner, marker, this.seedFingerprint, state);
      if (!written.ok) throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: lost the token refresh lock while saving the connection; it was not saved`, true);
      this.seedChecked = true;
      this.unsaved = undefined;
      this.options.logger?.info({ connection: this.options.connection, version: written.version }, `${this.name}: connected (a connect link started the token chain)`);
      return { version: written.version };
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  /** Deletes the chain under its refresh lock (connect revoke, after the platform was told). */
  async disconnect(): Promise<void> {
    const lock = new RedisLock(this.options.redis, this.store.lockKey, this.settings.lockTtlMs);
    if (!(await lock.acquireWithin(this.settings.lockWaitMs))) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: another process has held the token refresh lock too long; the chain was not deleted`, true);
    }
    try {
      await this.store.remove();
      this.unsaved = undefined;
    } finally {
      await lock.release().catch(() => undefined);
    }
  }

  private async read(): Promise<StoredTokens | undefined> {
    try {
      return await this.store.read();
    } catch (err) {
      throw new PlatformError('PLATFORM_AUTH_FAILED', `${this.name}: ${(err as Error).message}; reconnect and put a new refresh token in the tenants file`, false, { cause: err });
    }
  }

  private async refreshShared(rejected: number | undefined): Promise<AccessToken> {
    const lock = new RedisLock(this.options.redis, this.store.lockKey, this.settings.lockTtlMs);
    const policy: RetryPolicy = { ...LOCK_WAIT, deadlineMs: this.settings.lockWaitMs, retryable: (err) => err instanceof LockBusy };
    try {
      return await retry(async (attempt) => {
        if (attempt > 1) {
          // After a wait: the holder may have rotated meanwhile (no lock needed to use its token).
          const stored = await this.read();
          const usable = stored === undefined ? undefined : this.usable(stored, rejected);
          if (usable) return usable;
        }
        if (!(await lock.acquire())) throw new LockBusy();
        try {
          // Re-read under the lock: another process may have rotated while we waited.
          const stored = await this.load();
          return this.usable(stored, rejected) ?? (await this.rotate(stored, lock));
        } finally {
          await lock.release().catch(() => undefined);
        }
      }, policy);
    } catch (err) {
      if (!(err instanceof LockBusy)) throw err;
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: another process has held the token refresh lock too long; the run retries later`, true);
    }
  }

  private async rotate(stored: StoredTokens, lock: RedisLock): Promise<AccessToken> {
    const { state } = stored;
    const now = Date.now();
    let used = this.decrypt(state.cur, 'refresh');
    let usedAt = now;
    let answer = await this.call(used, lock);
    if (answer.kind === 'invalid_grant' && state.prev !== undefined && state.prevUsedAt !== undefined && now - state.prevUsedAt < this.settings.graceMs) {
      this.options.logger?.warn({ connection: this.options.connection }, `${this.name}: the stored refresh token was refused; retrying with the previous one within the platform's grace`);
      used = this.decrypt(state.prev, 'refresh');
      usedAt = state.prevUsedAt;
      answer = await this.call(used, lock);
    }
    if (answer.kind === 'invalid_grant') {
      const revoked: StoredState = { cur: state.cur, rotations: state.rotations, revoked: { at: now, reason: answer.detail } };
      if (state.rotatedAt !== undefined) revoked.rotatedAt = state.rotatedAt;
      if (state.connectedAt !== undefined) revoked.connectedAt = state.connectedAt;
      const marked = await this.store.commit(stored.version, lock.owner, revoked);
      if (!marked.ok) {
        // Another writer moved the chain meanwhile (a rotation landed after our lock expired): not revoked.
        throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the refresh token was refused while another process saved a newer one; the refresh is retried`, true);
      }
      this.options.logger?.error({ connection: this.options.connection, detail: answer.detail }, `${this.name}: the connection was revoked or expired`);
      this.options.hooks?.onRevoked?.({ connection: this.options.connection, at: now, reason: answer.detail });
      throw this.revokedError(answer.detail);
    }
    await this.options.hooks?.afterTokenResponse?.();
    const lifeMs = answer.expiresInS * 1000;
    const next: StoredState = {
      cur: this.encrypt(answer.refreshToken, 'refresh'),
      prev: this.encrypt(used, 'refresh'),
      prevUsedAt: usedAt,
      access: this.encrypt(answer.accessToken, 'access'),
      accessUntil: now + lifeMs - Math.min(this.settings.accessMarginMs, lifeMs / 4),
      rotatedAt: now,
      rotations: state.rotations + 1,
      ...(state.connectedAt !== undefined ? { connectedAt: state.connectedAt } : {}),
    };
    let committed: Awaited<ReturnType<PlatformTokenStore['commit']>>;
    try {
      committed = await this.store.commit(stored.version, lock.owner, next);
    } catch (err) {
      if (this.settings.graceMs > 0) throw err;
      committed = { ok: false, why: 'lock-lost' };
    }
    if (!committed.ok) {
      if (this.settings.graceMs > 0) {
        // The new tokens are dropped unused: the stored refresh token stays valid within the platform's grace.
        throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the rotated token could not be saved (${committed.why}); it is not used and the refresh is retried`, true);
      }
      // No grace: the stored refresh token is spent, so this answer is the chain now. Land it.
      this.options.logger?.warn({ connection: this.options.connection, why: committed.why }, `${this.name}: the rotated token could not be saved under the lock; landing it on the version it replaced`);
      const unsaved: Unsaved = { used, next, accessToken: answer.accessToken };
      this.unsaved = unsaved;
      const landed = await this.land(unsaved);
      if (landed) return landed;
      if (this.unsaved === undefined) throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the token chain moved on while the rotated token was saved; the refresh is retried`, true);
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the rotated token could not be saved yet; this process keeps it and saves it before any other refresh`, true);
    }
    this.options.logger?.info({ connection: this.options.connection, version: committed.version }, `${this.name}: tokens rotated`);
    return { token: answer.accessToken, version: committed.version };
  }

  /**
   * Lands a rotation whose save was lost (platforms without a grace): written on the version whose refresh token it
   * was made from, if that token is still the stored one (read, decrypted and compared here); already there, it is
   * taken as it is; anything else (a new chain from the tenants file) makes it moot. Undefined while Redis refuses
   * (tried `saveAttempts` times; the caller keeps it).
   */
  private async land(unsaved: Unsaved): Promise<AccessToken | undefined> {
    if (this.settings.saveAttempts <= 0) return undefined;
    const newRefresh = this.decrypt(unsaved.next.cur, 'refresh');
    const policy: RetryPolicy = { ...LAND_WAIT, retries: Math.max(0, this.settings.saveAttempts - 1), retryable: (err) => err instanceof NotLanded };
    try {
      return await retry(async (attempt) => {
        try {
          const stored = await this.store.read();
          const cur = stored === undefined ? undefined : this.decrypt(stored.state.cur, 'refresh');
          if (stored !== undefined && cur === newRefresh) {
            this.unsaved = undefined;
            return { token: unsaved.accessToken, version: stored.version };
          }
          if (stored === undefined || cur !== unsaved.used) {
            this.unsaved = undefined;
            this.options.logger?.warn({ connection: this.options.connection }, `${this.name}: a rotation whose save was lost is dropped: the stored chain moved on without it`);
            return undefined;
          }
          const committed = await this.store.commitAt(stored.version, unsaved.next);
          if (!committed.ok) throw new NotLanded();
          this.unsaved = undefined;
          this.options.logger?.info({ connection: this.options.connection, version: committed.version }, `${this.name}: tokens rotated (saved after the lock was lost)`);
          return { token: unsaved.accessToken, version: committed.version };
        } catch (err) {
          if (err instanceof PlatformError || err instanceof NotLanded) throw err;
          this.options.logger?.warn({ connection: this.options.connection, attempt: attempt - 1, reason: errorName(err) }, `${this.name}: saving the rotated token failed; retrying`);
          throw new NotLanded(undefined, { cause: err });
        }
      }, policy);
    } catch (err) {
      if (err instanceof NotLanded) return undefined;
      throw err;
    }
  }

  /**
   * One refresh-token grant at the token endpoint, through oauth4webapi as the code grant is (src/connect): the request,
   * the client's authentication (HTTP Basic of id and secret as they are, or both in the form), the answer's checks.
   * Network errors, timeouts and 5xx are retryable; a refresh token the platform says is gone (`invalid_grant`, or its
   * own word for it: `revokedErrors`) is returned as such. An answer without a refresh token keeps the one sent: the
   * platform does not rotate it (RFC 6749 6: it may send a new one). A 200 whose body is an error (Zoho's token
   * endpoint answers errors so) is read as that error.
   */
  private async call(refreshToken: string, lock: RedisLock): Promise<TokenCall> {
    if (!(await lock.isHeld())) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: lost the token refresh lock before the token call; the refresh is retried`, true);
    }
    const { tokenUrl, clientId, clientSecret, dispatcher } = this.options;
    const as: oauth.AuthorizationServer = { issuer: new URL(tokenUrl).origin, token_endpoint: tokenUrl };
    const client: oauth.Client = { client_id: clientId };
    const timeoutMs = this.settings.requestTimeoutMs;
    const options = {
      signal: AbortSignal.timeout(timeoutMs),
      [oauth.customFetch]: (url: string, init: RequestInit) => undiciFetch(url, { ...(init as unknown as Parameters<typeof undiciFetch>[1]), dispatcher }) as unknown as Promise<Response>,
      ...(tokenUrl.startsWith('http://') && isLoopbackHost(new URL(tokenUrl).hostname) ? { [oauth.allowInsecureRequests]: true } : {}),
    };
    let res: Response;
    try {
      res = await oauth.refreshTokenGrantRequest(as, client, clientAuthOf(this.options.clientAuth ?? 'basic', clientId, clientSecret), refreshToken, options);
    } catch (err) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the token endpoint did not answer (${errorName(err)}); the refresh is retried`, true, { cause: err });
    }
    const support = this.options.platform.supportHeader;
    const tid = support === undefined ? null : res.headers.get(support);
    const ref = support !== undefined && tid !== null ? `, ${support} ${tid}` : '';
    const body: unknown = await res
      .clone()
      .json()
      .catch(() => undefined);
    const errorIn = (b: unknown): string | undefined => (b !== null && typeof b === 'object' && typeof (b as Record<string, unknown>)['error'] === 'string' ? String((b as Record<string, unknown>)['error']) : undefined);
    let code: string | undefined;
    let tokens: oauth.TokenEndpointResponse | undefined;
    if (res.status === 200 && errorIn(body) !== undefined && (body as Record<string, unknown>)['access_token'] === undefined) code = errorIn(body);
    else {
      try {
        tokens = await oauth.processRefreshTokenResponse(as, client, withoutIdToken(res, body));
      } catch (err) {
        if (err instanceof oauth.ResponseBodyError) code = err.error;
        else if (res.status === 200) throw new PlatformError('PLATFORM_BAD_RESPONSE', `${this.name}: the token endpoint answered 200 without a usable token (${errorName(err)})${ref}`, true);
        else throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the token endpoint answered ${res.status}${errorIn(body) ? ` (${errorIn(body)})` : ''}${ref}; the refresh is retried`, true);
      }
    }
    if (tokens !== undefined) {
      const next = typeof tokens.refresh_token === 'string' && tokens.refresh_token !== '' ? tokens.refresh_token : refreshToken;
      return { kind: 'ok', accessToken: tokens.access_token, refreshToken: next, expiresInS: tokens.expires_in ?? 3600 };
    }
    const revoked = this.options.platform.revokedErrors ?? ['invalid_grant'];
    if (code !== undefined && (code === 'invalid_grant' || revoked.includes(code))) return { kind: 'invalid_grant', detail: `${code}${ref}` };
    if (code === 'invalid_client' || code === 'unauthorized_client') {
      throw new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `${this.name}: the token endpoint refused the app's credentials (${code}${ref}): check platform.clientId and platform.clientSecret in the tenants file`,
        false,
      );
    }
    throw new PlatformError('PLATFORM_UNAVAILABLE', `${this.name}: the token endpoint answered ${res.status}${code ? ` (${code})` : ''}${ref}; the refresh is retried`, true);
  }

  private revokedError(detail: string): PlatformError {
    return new PlatformError(
      'PLATFORM_AUTH_FAILED',
      `${this.name}: the connection to ${this.options.platform.connectionName} ${this.options.connection} was revoked or has expired (the token endpoint answered ${detail}). ` +
        `Reconnect the app ${this.options.platform.reconnectWhere}, then put the new refresh token in the tenants file (platform.refreshToken); ` +
        'syncs resume with it without a restart. Or send the customer a reconnect link (collections-sync connect link --tenant <id> --reconnect).',
      false,
    );
  }

  private encrypt(token: string, kind: 'refresh' | 'access'): string {
    return this.options.cipher.encrypt(token, this.options.platform.context(this.options.connection, kind));
  }

  private decrypt(box: string, kind: 'refresh' | 'access'): string {
    try {
      return this.options.cipher.decrypt(box, this.options.platform.context(this.options.connection, kind));
    } catch (err) {
      throw new ChainUndecryptable(
        'PLATFORM_AUTH_FAILED',
        `${this.name}: the stored ${kind} token cannot be decrypted with PLATFORM_TOKEN_KEY${this.options.cipher.rotating ? ' or PLATFORM_TOKEN_KEY_PREVIOUS' : ''} (was the key changed?): ` +
          'give the key it was sealed with as PLATFORM_TOKEN_KEY_PREVIOUS (docs/security.md), or send a reconnect link (collections-sync connect link --tenant <id> --reconnect)',
        false,
        { cause: err },
      );
    }
  }
}

/**
 * The app's authentication at a token endpoint. Basic: base64 of `id:secret` as they are (oauth4webapi's
 * ClientSecretBasic form-encodes both first, RFC 6749 2.3.1, which the platforms' token endpoints are not known to
 * decode; the code grant in src/connect spells it the same way). Post: both in the form.
 */
export function clientAuthOf(kind: 'basic' | 'post', clientId: string, secret: Secret): oauth.ClientAuth {
  if (kind === 'post') return oauth.ClientSecretPost(secret.reveal());
  return (_as, _client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${clientId}:${secret.reveal()}`, 'utf8').toString('base64')}`);
  };
}

/**
 * The token answer without its `id_token`: we ask for no OpenID scope and read no identity, but Intuit's refresh
 * answers may carry one (its documented sample does), and oauth4webapi would validate it as an OpenID provider's
 * (issuer, audience, expiry), refusing a good refresh over a token we never use.
 */
function withoutIdToken(res: Response, body: unknown): Response {
  if (body === null || typeof body !== 'object' || !('id_token' in body)) return res;
  const { id_token: _ignored, ...rest } = body as Record<string, unknown>;
  const headers = new Headers(res.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(rest), { status: res.status, statusText: res.statusText, headers });
}
