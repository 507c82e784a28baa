import { createHmac } from 'node:crypto';
import type { Secret } from '../secret.js';
import { clientDigest, clientKey, clientKeysPattern, clientOfKey } from '../redis/keys.js';

/**
 * The client key of the token protocol: one per (auth URL, client id), a digest of both (issue 17). Two tenants
 * with the same client id on the same service share one token, as the service does; on two services they do not.
 * The URL is compared without its trailing slashes, scheme and host in lower case.
 */
export function authClientKey(authUrl: string, clientId: string): string {
  return clientDigest('collections-auth', normalizeAuthUrl(authUrl), clientId);
}

function normalizeAuthUrl(authUrl: string): string {
  try {
    const u = new URL(authUrl);
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return authUrl.replace(/\/+$/, '');
  }
}

const AUTH_KIND = 'auth';

/** The Redis keys of one client's token protocol (`client`: its authClientKey). All under the one prefix. */
export interface AuthKeys {
  /** HASH token, version, issuedAt, expiresAt (ms). Never expires, so versions never go back. */
  readonly token: string;
  /** STRING owner, PX gate TTL: present while a rotation drains and rotates. */
  readonly gate: string;
  /** ZSET lease id -> expiry (ms); expired members are purged by the scripts. */
  readonly leases: string;
  /** STRING, short PX: someone waits under the in-flight limit, so releases must publish. */
  readonly limitWait: string;
  /** HASH reason, failures, nextAttemptAt, secretFingerprint, at. */
  readonly failure: string;
  /** STRING owner (RedisLock): at most one rotation per client at a time. */
  readonly lock: string;
  /** Pub/sub channel: 'rotated' | 'opened' | 'released' | 'failed'. */
  readonly channel: string;
}

export function authKeys(prefix: string, client: string): AuthKeys {
  const k = (part: string): string => clientKey(prefix, client, AUTH_KIND, part);
  return {
    token: k('token'),
    gate: k('gate'),
    leases: k('leases'),
    limitWait: k('limit-wait'),
    failure: k('failure'),
    lock: k('lock'),
    channel: k('events'),
  };
}

/** A SCAN pattern for the token-protocol keys of every client, and the client of one such key. */
export const authKeysPattern = (prefix: string): string => clientKeysPattern(prefix, AUTH_KIND);
export const authClientOfKey = (prefix: string, key: string): string | undefined => clientOfKey(prefix, AUTH_KIND, key);

/**
 * A keyed fingerprint of a client's credentials (HMAC-SHA256 under the deployment's fingerprint key, 32 hex
 * digits): it tells whether the secret changed since the endpoint refused it, without keeping the secret; without
 * the key (never in Redis) a weak secret cannot be guessed from a Redis dump (issue 17).
 */
export function secretFingerprint(clientId: string, secret: Secret, key: Buffer): string {
  return createHmac('sha256', key).update(clientId).update('\0').update(secret.reveal()).digest('hex').slice(0, 32);
}
