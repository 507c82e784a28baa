/**
 * The console's sessions (decision 0270). Signing in with an API key makes a session: a random id (32 bytes) goes to
 * the browser in a cookie (HttpOnly, SameSite=Strict; `__Host-` and Secure when PUBLIC_URL is https), and Redis keeps
 * the session under the id's digest, sealed (AES-256-GCM) with a key derived from the id itself. So Redis holds
 * nothing a reader could use: not the id (only its digest), not the API key (only its name and a digest of it, to end
 * the session when the key changes), and the record opens only with the cookie. The record expires with the session
 * (CONSOLE_SESSION_S from sign-in); signing out deletes it. Every state-changing form carries the session's CSRF token.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { cookieValue, sameSecret } from '../guards.js';

const ID = /^[A-Za-z0-9_-]{43}$/;
const INFO = 'collections-sync console session v1';

const recordSchema = z.object({
  v: z.literal(1),
  /** The API key's name (API_KEYS), and a digest of its value: a key changed since signs the session out. */
  keyName: z.string().min(1),
  keyDigest: z.string().min(1),
  csrf: z.string().min(1),
  createdAt: z.number().int(),
  expiresAt: z.number().int(),
});
export type Session = z.infer<typeof recordSchema> & { id: string };

/** The digest of an API key's value as a session keeps it. */
export const keyDigestOf = (key: string): string => createHash('sha256').update(`console:${key}`, 'utf8').digest('base64url');

/** The cookie's name: `__Host-` (bound to this host, path /, Secure) when the public address is https. */
export const sessionCookieName = (secure: boolean): string => (secure ? '__Host-cs_console' : 'cs_console');
/** The sign-in form's own cookie (a double-submitted token: the form's CSRF check before a session exists). */
export const signInCookieName = (secure: boolean): string => (secure ? '__Host-cs_console_signin' : 'cs_console_signin');

/** A cookie's value from a Cookie header, when it has the form of our values. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  return cookieValue(header, name, ID);
}

/** A Set-Cookie value; `maxAgeS` 0 clears it. Path / (a `__Host-` cookie must have it). */
export function cookie(name: string, value: string, maxAgeS: number, secure: boolean): string {
  return `${name}=${value}; Path=/; Max-Age=${maxAgeS}; HttpOnly;${secure ? ' Secure;' : ''} SameSite=Strict`;
}

export const newToken = (): string => randomBytes(32).toString('base64url');

export class SessionStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlS: number,
  ) {}

  private keyOf(id: string): string {
    return `${this.prefix}:console:session:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;
  }

  private static sealKey(id: string): Buffer {
    return Buffer.from(hkdfSync('sha256', Buffer.from(id, 'utf8'), Buffer.alloc(0), INFO, 32));
  }

  /** Makes a session for the key `keyName` (whose value has digest `keyDigest`): its id, for the cookie. */
  async create(keyName: string, keyDigest: string, now = Date.now()): Promise<Session> {
    const id = newToken();
    const record = { v: 1 as const, keyName, keyDigest, csrf: newToken(), createdAt: now, expiresAt: now + this.ttlS * 1000 };
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', SessionStore.sealKey(id), iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(record), 'utf8'), cipher.final()]);
    await this.redis.set(this.keyOf(id), Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64'), 'EX', this.ttlS);
    return { ...record, id };
  }

  /** The session of a cookie's id: undefined when there is none (never made, signed out, expired, or not readable). */
  async get(id: string | undefined, now = Date.now()): Promise<Session | undefined> {
    if (id === undefined || !ID.test(id)) return undefined;
    const text = await this.redis.get(this.keyOf(id));
    if (text === null) return undefined;
    try {
      const raw = Buffer.from(text, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', SessionStore.sealKey(id), raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const plain = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      const record = recordSchema.parse(JSON.parse(plain));
      return record.expiresAt > now ? { ...record, id } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Ends a session (sign-out, a key that changed). */
  async end(id: string): Promise<void> {
    if (ID.test(id)) await this.redis.del(this.keyOf(id));
  }
}

/** Whether a form's CSRF token is the session's (constant time). */
export function csrfMatches(session: Pick<Session, 'csrf'>, sent: unknown): boolean {
  return typeof sent === 'string' && sent.length > 0 && sameSecret(sent, session.csrf);
}
