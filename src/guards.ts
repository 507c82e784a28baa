/**
 * The public side's checks of what a request carries, in one place (a floor every room may stand on: it imports
 * nothing of ours): secrets compared in constant time, the one parser of `Authorization: Bearer`, the one test of a
 * JSON content type, and the RFC 9457 problem body every error of the public server is written as.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const sha256 = (b: Uint8Array | string): Buffer => createHash('sha256').update(b).digest();

/** Whether two secrets are equal, in constant time whatever their lengths (both are hashed to 32 bytes first). */
export function sameSecret(a: Uint8Array | string, b: Uint8Array | string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Whether two digests (MACs) are equal, in constant time; digests of different lengths never are. */
export function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token of `Authorization: Bearer <token>` (one token, no spaces in it), or undefined. */
export function bearerOf(authorization: string | undefined): string | undefined {
  return /^Bearer[ \t]+(\S+)$/i.exec(authorization?.trim() ?? '')?.[1];
}

/** Whether a Content-Type names JSON: `application/json` or a `+json` type (`application/merge-patch+json`), any parameters. */
export function isJsonType(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type !== undefined && /^application\/([a-z0-9.-]+\+)?json$/.test(type);
}

/** RFC 9457 problem details: the body of every error answer of the public server. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

/** An RFC 9457 answer (`application/problem+json`, never cached). */
export function problemAnswer(p: ProblemBody, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(p), { status: p.status, headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers } });
}

/** A cookie's value from a Cookie header when it has the form `valid` gives (undefined: none, or not one of ours). */
export function cookieValue(header: string | undefined, name: string, valid: RegExp): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      return valid.test(value) ? value : undefined;
    }
  }
  return undefined;
}
