/**
 * In-process token providers for tests and one-off tools. Production uses src/auth's Redis-backed provider
 * (gate, leases, shared rotation); these have no leases to drain, so a rotation here can still break
 * requests in flight in other processes.
 */
import type { Dispatcher } from 'undici';
import type { Secret } from '../secret.js';
import { requestToken } from './token.js';
import type { AuthRejectReason, TokenLease, TokenProvider } from './token-provider.js';

export interface StaticTokenProviderOptions {
  authUrl: string;
  clientId: string;
  clientSecret: Secret;
  timeoutMs?: number;
  dispatcher?: Dispatcher;
  /** Fetch a new token this long before the JWT's `exp` (default 5 s). */
  marginMs?: number;
}

interface Current {
  token: string;
  version: number;
  expiresAtMs: number | undefined;
}

const noop = async (): Promise<void> => {};

/**
 * Gets a token on first use (single-flight in process); gets a new one when the current one is about to
 * expire, or on `rejected(lease)` if `lease.version` is still current (compare-and-refresh in process).
 */
export class StaticTokenProvider implements TokenProvider {
  readonly #o: StaticTokenProviderOptions;
  #current: Current | undefined;
  #inflight: Promise<void> | undefined;
  #issued = 0;

  constructor(o: StaticTokenProviderOptions) {
    this.#o = o;
  }

  /** Tokens this provider has obtained. */
  get tokensIssued(): number {
    return this.#issued;
  }

  async acquire(signal?: AbortSignal): Promise<TokenLease> {
    let cur = this.#current;
    if (cur === undefined || (cur.expiresAtMs !== undefined && Date.now() >= cur.expiresAtMs - (this.#o.marginMs ?? 5_000))) {
      await untilAborted(this.#refresh(cur?.version ?? 0), signal);
      cur = this.#current;
      if (cur === undefined) throw new Error('token provider has no token after a refresh');
    }
    return { token: cur.token, version: cur.version, release: noop };
  }

  async rejected(lease: TokenLease, _reason: AuthRejectReason, signal?: AbortSignal): Promise<void> {
    await untilAborted(this.#refresh(lease.version), signal);
  }

  /** Fetches a new token unless one newer than `seenVersion` exists or is being fetched. */
  #refresh(seenVersion: number): Promise<void> {
    if (this.#inflight) return this.#inflight;
    if ((this.#current?.version ?? 0) !== seenVersion) return Promise.resolve();
    const fetching = (async () => {
      const t = await requestToken({
        authUrl: this.#o.authUrl,
        clientId: this.#o.clientId,
        clientSecret: this.#o.clientSecret,
        ...(this.#o.timeoutMs === undefined ? {} : { timeoutMs: this.#o.timeoutMs }),
        ...(this.#o.dispatcher === undefined ? {} : { dispatcher: this.#o.dispatcher }),
      });
      this.#issued += 1;
      this.#current = { token: t.accessToken, version: seenVersion + 1, expiresAtMs: t.expiresAtMs };
    })().finally(() => {
      this.#inflight = undefined;
    });
    this.#inflight = fetching;
    return fetching;
  }
}

/** One token, never refreshed (the benchmark's baseline, tools with a pasted token). */
export class FixedTokenProvider implements TokenProvider {
  readonly #token: string;
  constructor(token: string) {
    this.#token = token;
    this.#lease = { token: this.#token, version: 0, release: noop };
  }
  readonly #lease: TokenLease;
  async acquire(): Promise<TokenLease> {
    return this.#lease;
  }
  tryAcquire(): TokenLease {
    return this.#lease;
  }
  async rejected(): Promise<void> {}
}

/** Waits for a shared promise, giving up (without cancelling it) when this caller's signal fires. */
function untilAborted(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
