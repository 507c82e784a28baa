/**
 * Who calls: the API key of `Authorization: Bearer <key>` among API_KEYS (src/config/api-keys.ts), compared in
 * constant time (digests of equal length, every key compared whatever matched), and what it may see. How often it may
 * call: MinuteLimiter (src/http-server.ts) per key name, per process.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKey } from '../config/api-keys.js';
import { bearerOf } from '../guards.js';

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The key `authorization` carries, or undefined (no Bearer token, or none of ours). */
export function keyOf(keys: readonly { key: ApiKey; digest: Buffer }[], authorization: string | undefined): ApiKey | undefined {
  const bearer = bearerOf(authorization);
  // Without a token the digest of '' is compared all the same: the answer costs what a wrong key's does.
  const digest = sha256(bearer ?? '');
  let found: ApiKey | undefined;
  for (const k of keys) if (timingSafeEqual(digest, k.digest) && bearer !== undefined) found = k.key;
  return found;
}

/** The keys with their digests, computed once. */
export function digestKeys(keys: readonly ApiKey[]): { key: ApiKey; digest: Buffer }[] {
  return keys.map((key) => ({ key, digest: sha256(key.key.reveal()) }));
}

/** Whether the key may see `tenant` (a key limited to some tenants sees no other: answered as unknown). */
export function maySee(key: ApiKey, tenant: string): boolean {
  return key.tenants === undefined || key.tenants.has(tenant);
}
