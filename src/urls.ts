/**
 * The rules of addresses that receive a secret (a client secret, a refresh or access token): https://, or http:// to
 * this machine only (a test double, a local proxy); plain http to another host is refused at load (decisions 0119,
 * 0175). Any room may import this file, as it may src/retry.ts: the tenants file's collections and notify addresses,
 * and every platform module's addresses, follow the one rule.
 */
import { z } from 'zod';

/** Whether `hostname` (as URL gives it) is this machine: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** An http(s) URL, its trailing slash dropped. */
export const httpUrl = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/$/, ''));

export const SECRET_URL_RULE = 'must be https:// (http:// only to 127.0.0.0/8, ::1 or localhost)';

/** Whether a URL may receive a secret: https://, or http:// to this machine. */
export function isSecretSafeUrl(u: string): boolean {
  return u.startsWith('https://') || isLoopbackHost(new URL(u).hostname);
}

/** An address that receives a secret (a platform's apiUrl, tokenUrl; a tenant's collections addresses). */
export const secretSafeUrl = httpUrl.refine(isSecretSafeUrl, SECRET_URL_RULE);
