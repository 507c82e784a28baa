/**
 * The browser a connect flow belongs to (security review, finding 2; decision 0161): opening a link sets a random
 * value in a cookie (HttpOnly, SameSite=Lax, Path=/; `__Host-` and Secure when PUBLIC_URL is https), and the state
 * (and a grant waiting for a pick) keeps its digest. The callback and the pick must carry the same cookie: a consent
 * URL sent to another person lands on a callback without it. A browser that already has one keeps it (two links
 * opened in one browser both complete). Lax, not Strict: the callback is a top-level redirect from the platform's
 * site, which a Strict cookie would not come with.
 */
import { createHash, randomBytes } from 'node:crypto';
import { cookieValue, sameDigest } from '../guards.js';

const NAME = 'cs_connect';
const VALUE = /^[A-Za-z0-9_-]{43}$/;
/** As long as a state or a pick lives (10 minutes). */
const MAX_AGE_S = 600;

/** The cookie's name: `__Host-` (bound to this host, path /, Secure) when the public address is https. */
export function browserCookieName(secure: boolean): string {
  return secure ? `__Host-${NAME}` : NAME;
}

/** The browser's value from a Cookie header (undefined: none, or not one of ours). */
export function browserOf(cookieHeader: string | undefined, secure: boolean): string | undefined {
  return cookieValue(cookieHeader, browserCookieName(secure), VALUE);
}

/** A new browser value: 32 random bytes. */
export function newBrowser(): string {
  return randomBytes(32).toString('base64url');
}

/** The Set-Cookie header value for `value`. */
export function browserCookie(value: string, secure: boolean): string {
  return `${browserCookieName(secure)}=${value}; Path=/; Max-Age=${MAX_AGE_S}; HttpOnly;${secure ? ' Secure;' : ''} SameSite=Lax`;
}

/** What a state keeps of the browser: a digest (the value itself is a bearer of the flow). */
export function browserDigest(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** Whether `value` is the browser whose digest was kept (constant time). */
export function sameBrowser(value: string, digest: string): boolean {
  const a = Buffer.from(browserDigest(value), 'utf8');
  const b = Buffer.from(digest, 'utf8');
  return sameDigest(a, b);
}
