/**
 * Xero OAuth 2.0 for one connection, shared by every process through Redis (token-store.ts).
 *
 * Xero's rules: an access token lives 30 minutes; the refresh token rotates on every use (the old one stops
 * working), and a refresh token whose successor was never used may be used again for 30 minutes (the grace).
 * So:
 * - One refresh at a time per connection across all processes: a Redis lock (lock.ts); whoever gets it re-reads the
 *   stored tokens first (another process may have just rotated them) and only then calls the token endpoint.
 * - The rotated refresh token is committed (Lua, fenced by the lock owner and the version read) before the new
 *   access token is handed out or the new refresh token is ever sent. A crash between Xero's answer and the
 *   commit leaves the old refresh token stored; the next refresh sends it again, which Xero honours within the
 *   grace because its successor was never used.
 * - If Xero refuses the stored refresh token while the previous one is within the grace, the previous one is tried
 *   once. A final `invalid_grant` marks the connection revoked in Redis (every process then fails fast, without
 *   calling Xero) until a new refresh token appears in the tenants file.
 * - The token call's timeout is well under the lock's TTL, and the lock is re-checked just before the call.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import type { Secret } from '../../config/secret.js';
import { RedisLock } from '../../redis/lock.js';
import { PlatformError } from '../types.js';
import type { TokenCipher } from './cipher.js';
import { tokenErrorSchema, tokenResponseSchema } from './schemas.js';
import { XeroTokenStore, type StoredState, type StoredTokens } from './token-store.js';

export interface XeroAuthSettings {
  /** Timeout of one token call (must stay well under `lockTtlMs`). Default 10 s. */
  requestTimeoutMs: number;
  /** TTL of the refresh lock. Default 30 s. */
  lockTtlMs: number;
  /** How long a caller waits for another process's refresh before giving up (retryable). Default 45 s. */
  lockWaitMs: number;
  /** How long after its use a previous refresh token is still tried (Xero allows 30 minutes). Default 25 min. */
  graceMs: number;
  /** An access token is replaced this long before it expires (at most a quarter of its lifetime). Default 60 s. */
  accessMarginMs: number;
}

export const DEFAULT_AUTH_SETTINGS: XeroAuthSettings = {
  requestTimeoutMs: 10_000,
  lockTtlMs: 30_000,
  lockWaitMs: 45_000,
  graceMs: 25 * 60_000,
  accessMarginMs: 60_000,
};

/** Test seams: what happens around the token call (a test kills the process between answer and commit). */
export interface XeroAuthHooks {
  afterTokenResponse?(): Promise<void> | void;
}

export interface XeroAuthOptions {
  redis: Redis;
  prefix: string;
  /** The connection's key in Redis (the Xero tenant id). */
  connection: string;
  clientId: string;
  clientSecret: Secret;
  /** The tenants file's refresh token: the start of the chain (used only until the first rotation). */
  refreshToken: Secret;
  tokenUrl: string;
  cipher: TokenCipher;
  dispatcher: Dispatcher;
  logger?: Logger;
  settings?: Partial<XeroAuthSettings>;
  hooks?: XeroAuthHooks;
}

export interface AccessToken {
  token: string;
  /** The stored version it belongs to: pass it back as `rejected` when Xero answers 401 with it. */
  version: number;
}

type TokenCall =
  | { kind: 'ok'; accessToken: string; refreshToken: string; expiresInS: number }
  | { kind: 'invalid_grant'; detail: string };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class XeroAuth {
  readonly store: XeroTokenStore;
  private readonly settings: XeroAuthSettings;
  private readonly seedFingerprint: string;
  private seedChecked = false;
  private inflight: Promise<AccessToken> | undefined;

  constructor(private readonly options: XeroAuthOptions) {
    this.settings = { ...DEFAULT_AUTH_SETTINGS, ...options.settings };
    this.store = new XeroTokenStore(options.redis, options.prefix, options.connection);
    this.seedFingerprint = options.cipher.fingerprint(options.refreshToken.reveal());
  }

  /**
   * A valid access token. `rejected`: the version whose token Xero just refused (401); a newer stored token is
   * used as it is, and only that version triggers a refresh (so a burst of 401s makes one refresh).
   */
  async accessToken(rejected?: number): Promise<AccessToken> {
    const stored = await this.load();
    const usable = this.usable(stored, rejected);
    if (usable) return usable;
    this.inflight ??= this.refreshShared(rejected).finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
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
    if (stored === undefined || (stored.seed !== this.seedFingerprint && !this.seedChecked)) {
      const initial: StoredState = { cur: this.encrypt(this.options.refreshToken.reveal(), 'refresh'), rotations: 0 };
      const outcome = await this.store.seed(this.seedFingerprint, initial);
      this.seedChecked = true;
      if (outcome === 2) this.options.logger?.warn({ connection: this.options.connection }, 'xero: a new refresh token in the tenants file restarted the token chain');
      stored = await this.read();
      if (stored === undefined) throw new PlatformError('PLATFORM_UNAVAILABLE', 'xero: the token state vanished from Redis while seeding it', true);
    }
    return stored;
  }

  private async read(): Promise<StoredTokens | undefined> {
    try {
      return await this.store.read();
    } catch (err) {
      throw new PlatformError('PLATFORM_AUTH_FAILED', `xero: ${(err as Error).message}; reconnect and put a new refresh token in the tenants file`, false, { cause: err });
    }
  }

  private async refreshShared(rejected: number | undefined): Promise<AccessToken> {
    const lock = new RedisLock(this.options.redis, this.store.lockKey, this.settings.lockTtlMs);
    const deadline = Date.now() + this.settings.lockWaitMs;
    for (;;) {
      if (await lock.acquire()) {
        try {
          // Re-read under the lock: another process may have rotated while we waited.
          const stored = await this.load();
          return this.usable(stored, rejected) ?? (await this.rotate(stored, lock));
        } finally {
          await lock.release().catch(() => undefined);
        }
      }
      await sleep(50 + Math.floor(Math.random() * 50));
      const stored = await this.read();
      if (stored !== undefined) {
        const usable = this.usable(stored, rejected);
        if (usable) return usable;
      }
      if (Date.now() > deadline) {
        throw new PlatformError('PLATFORM_UNAVAILABLE', 'xero: another process has held the token refresh lock too long; the run retries later', true);
      }
    }
  }

  private async rotate(stored: StoredTokens, lock: RedisLock): Promise<AccessToken> {
    const { state } = stored;
    const now = Date.now();
    let used = this.decrypt(state.cur, 'refresh');
    let usedAt = now;
    let answer = await this.call(used, lock);
    if (answer.kind === 'invalid_grant' && state.prev !== undefined && state.prevUsedAt !== undefined && now - state.prevUsedAt < this.settings.graceMs) {
      this.options.logger?.warn({ connection: this.options.connection }, "xero: the stored refresh token was refused; retrying with the previous one within Xero's grace");
      used = this.decrypt(state.prev, 'refresh');
      usedAt = state.prevUsedAt;
      answer = await this.call(used, lock);
    }
    if (answer.kind === 'invalid_grant') {
      const revoked: StoredState = { cur: state.cur, rotations: state.rotations, revoked: { at: now, reason: answer.detail } };
      if (state.rotatedAt !== undefined) revoked.rotatedAt = state.rotatedAt;
      await this.store.commit(stored.version, lock.owner, revoked);
      this.options.logger?.error({ connection: this.options.connection, detail: answer.detail }, 'xero: the connection was revoked or expired');
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
    };
    const committed = await this.store.commit(stored.version, lock.owner, next);
    if (!committed.ok) {
      // The new tokens are dropped unused: the stored refresh token stays valid within Xero's grace.
      throw new PlatformError('PLATFORM_UNAVAILABLE', `xero: the rotated token could not be saved (${committed.why}); it is not used and the refresh is retried`, true);
    }
    this.options.logger?.info({ connection: this.options.connection, version: committed.version }, 'xero: tokens rotated');
    return { token: answer.accessToken, version: committed.version };
  }

  /** One call to the token endpoint. Network errors, timeouts and 5xx are retryable; invalid_grant is returned. */
  private async call(refreshToken: string, lock: RedisLock): Promise<TokenCall> {
    if (!(await lock.isHeld())) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', 'xero: lost the token refresh lock before the token call; the refresh is retried', true);
    }
    const basic = Buffer.from(`${this.options.clientId}:${this.options.clientSecret.reveal()}`, 'utf8').toString('base64');
    let status: number;
    let body: unknown;
    try {
      const res = await request(this.options.tokenUrl, {
        method: 'POST',
        dispatcher: this.options.dispatcher,
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString(),
        signal: AbortSignal.timeout(this.settings.requestTimeoutMs),
        headersTimeout: this.settings.requestTimeoutMs,
        bodyTimeout: this.settings.requestTimeoutMs,
      });
      status = res.statusCode;
      const text = await res.body.text();
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    } catch (err) {
      throw new PlatformError('PLATFORM_UNAVAILABLE', `xero: the token endpoint did not answer (${errorName(err)}); the refresh is retried`, true, { cause: err });
    }
    if (status === 200) {
      const ok = tokenResponseSchema.safeParse(body);
      if (!ok.success) throw new PlatformError('PLATFORM_BAD_RESPONSE', 'xero: the token endpoint answered 200 without access_token, refresh_token and expires_in', true);
      return { kind: 'ok', accessToken: ok.data.access_token, refreshToken: ok.data.refresh_token, expiresInS: ok.data.expires_in };
    }
    const error = tokenErrorSchema.safeParse(body);
    const code = error.success ? error.data.error : undefined;
    if (code === 'invalid_grant') return { kind: 'invalid_grant', detail: 'invalid_grant' };
    if (code === 'invalid_client' || code === 'unauthorized_client') {
      throw new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `xero: the token endpoint refused the app's credentials (${code}): check platform.clientId and platform.clientSecret in the tenants file`,
        false,
      );
    }
    throw new PlatformError('PLATFORM_UNAVAILABLE', `xero: the token endpoint answered ${status}${code ? ` (${code})` : ''}; the refresh is retried`, true);
  }

  private revokedError(detail: string): PlatformError {
    return new PlatformError(
      'PLATFORM_AUTH_FAILED',
      `xero: the connection to Xero organisation ${this.options.connection} was revoked or has expired (the token endpoint answered ${detail}). ` +
        'Reconnect the app to that organisation in Xero, then put the new refresh token in the tenants file (platform.refreshToken); ' +
        'syncs resume with it without a restart.',
      false,
    );
  }

  private encrypt(token: string, kind: 'refresh' | 'access'): string {
    return this.options.cipher.encrypt(token, `${this.options.connection}:${kind}`);
  }

  private decrypt(box: string, kind: 'refresh' | 'access'): string {
    try {
      return this.options.cipher.decrypt(box, `${this.options.connection}:${kind}`);
    } catch (err) {
      throw new PlatformError(
        'PLATFORM_AUTH_FAILED',
        `xero: the stored ${kind} token cannot be decrypted with PLATFORM_TOKEN_KEY (was the key changed?): restore the key, or reconnect and put a new refresh token in the tenants file`,
        false,
        { cause: err },
      );
    }
  }
}

function errorName(err: unknown): string {
  if (err instanceof Error) return (err as Error & { code?: string }).code ?? err.name;
  return 'error';
}
