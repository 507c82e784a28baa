/**
 * Token issuance and checking, as the service does it (collections-api.md, Authentication): a JWT (HS256, signed
 * with the simulator's own random key) with claims sub = client id, iat, exp (seconds) and gen (the client's token
 * generation). Issuing a token invalidates every older token of that client at once. A token expires exactly at
 * exp * 1000 ms, with exp = floor((issuedMs + lifetime) / 1000), so a client reading `exp` is right.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type AuthFailure = 'missing' | 'expired' | 'superseded' | 'invalid';

export type TokenCheck = { ok: true; clientId: string; gen: number } | { ok: false; reason: AuthFailure };

export interface IssuedToken {
  token: string;
  gen: number;
  exp: number;
}

interface ClientEntry {
  secretHash: Buffer;
  /** Generation of the newest token issued (0 = none yet). */
  gen: number;
}

interface Claims {
  sub: string;
  gen: number;
  exp: number;
}

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
const hashSecret = (s: string): Buffer => createHash('sha256').update(s).digest();

export class TokenAuthority {
  readonly #key = randomBytes(32);
  readonly #clients = new Map<string, ClientEntry>();
  /** Verified signatures, so a hot token costs one Map lookup (claims still checked every time). */
  readonly #verified = new Map<string, Claims>();
  #lifetimeMs: number;
  readonly #now: () => number;

  constructor(lifetimeMs: number, now: () => number = Date.now) {
    this.#lifetimeMs = lifetimeMs;
    this.#now = now;
  }

  setLifetime(ms: number): void {
    if (!Number.isFinite(ms) || ms <= 0) throw new RangeError('token lifetime must be a positive number of ms');
    this.#lifetimeMs = ms;
  }

  setClient(clientId: string, clientSecret: string): void {
    const existing = this.#clients.get(clientId);
    if (existing) existing.secretHash = hashSecret(clientSecret);
    else this.#clients.set(clientId, { secretHash: hashSecret(clientSecret), gen: 0 });
  }

  hasClient(clientId: string): boolean {
    return this.#clients.has(clientId);
  }

  /** A new token for the client (invalidating all its older ones), or null on wrong or unknown credentials. */
  issue(clientId: string, clientSecret: string): IssuedToken | null {
    const entry = this.#clients.get(clientId);
    if (!entry || !timingSafeEqual(entry.secretHash, hashSecret(clientSecret))) return null;
    entry.gen += 1;
    const issuedMs = this.#now();
    const exp = Math.floor((issuedMs + this.#lifetimeMs) / 1000);
    const payload = b64url(JSON.stringify({ sub: clientId, iat: Math.floor(issuedMs / 1000), exp, gen: entry.gen }));
    const signingInput = `${HEADER}.${payload}`;
    const token = `${signingInput}.${this.#sign(signingInput)}`;
    if (this.#verified.size > 10_000) this.#verified.clear();
    this.#verified.set(token, { sub: clientId, gen: entry.gen, exp });
    return { token, gen: entry.gen, exp };
  }

  /** Checks an Authorization header value. Expiry is reported before supersession (the token was dead anyway). */
  check(authorization: string | undefined): TokenCheck {
    if (authorization === undefined || authorization === '') return { ok: false, reason: 'missing' };
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!m?.[1]) return { ok: false, reason: 'invalid' };
    const claims = this.#claims(m[1]);
    if (!claims) return { ok: false, reason: 'invalid' };
    const entry = this.#clients.get(claims.sub);
    if (!entry) return { ok: false, reason: 'invalid' };
    if (this.#now() >= claims.exp * 1000) return { ok: false, reason: 'expired' };
    if (claims.gen < entry.gen) return { ok: false, reason: 'superseded' };
    return { ok: true, clientId: claims.sub, gen: claims.gen };
  }

  #sign(input: string): string {
    return createHmac('sha256', this.#key).update(input).digest('base64url');
  }

  #claims(token: string): Claims | null {
    const cached = this.#verified.get(token);
    if (cached) return cached;
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    const [header, payload, sig] = parts as [string, string, string];
    const expected = Buffer.from(this.#sign(`${header}.${payload}`));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
    try {
      const parsed: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null) return null;
      const { sub, gen, exp } = parsed as Record<string, unknown>;
      if (typeof sub !== 'string' || typeof gen !== 'number' || typeof exp !== 'number') return null;
      const claims = { sub, gen, exp };
      this.#verified.set(token, claims);
      return claims;
    } catch {
      return null;
    }
  }
}
