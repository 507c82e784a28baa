/**
 * The connection state of every OAuth platform's tenant (Xero, QuickBooks, ...: the registry's), read from Redis (the binding and the token chain, never a
 * token), for `connect status` and the connection-state metric; and `connect revoke`.
 *
 *   connected            a chain that works as far as we know: since when, the refresh token's age (the last rotation)
 *   awaiting_connection  no chain yet and no refresh token in the tenants file: send a connect link
 *   needs_reconnect      the platform refused the chain (revoked, or expired after its idle limit), or it cannot be
 *                        decrypted with PLATFORM_TOKEN_KEY (nor PLATFORM_TOKEN_KEY_PREVIOUS: decision 0163): send a
 *                        reconnect link, or give the old key back
 *
 * A refresh token unused for its platform's idle limit expires (Xero 60 days, Intuit about 100): `ageing` warns when
 * the last rotation is more than three quarters of it ago. The daily reconcile pass of every tenant's schedule calls
 * the platform, which rotates the token, so a tenant with a schedule does not age out; one whose worker is stopped does.
 */
import type { Redis } from 'ioredis';
import type { TenantConfig } from '../config/tenants.js';
import type { TokenKeys } from '../config/token-key.js';
import { BindingStore, type Binding } from '../platforms/oauth/binding.js';
import { TokenCipher } from '../platforms/oauth/cipher.js';
import { PlatformTokenStore, type StoredTokens } from '../platforms/oauth/token-store.js';
import { moduleOf, oauthOf, type PlatformKind } from '../platforms/registry.js';

export type ConnectionState = 'connected' | 'awaiting_connection' | 'needs_reconnect';

const DAY = 86_400_000;

export interface ConnectionReport {
  tenant: string;
  /** The platform's kind (an OAuth platform's). */
  platform: PlatformKind;
  state: ConnectionState;
  /** The organisation id (Xero) or realm id (QuickBooks), and its name when known. */
  connection?: string;
  name?: string;
  /** How it was connected: a connect link, or the tenants file's refresh token. */
  via?: 'link' | 'tenants file';
  connectedAt?: number;
  /** When the refresh token last rotated (or was issued): its idle clock. */
  refreshedAt?: number;
  refreshTokenAgeDays?: number;
  /** The refresh token nears its platform's idle expiry. */
  ageing?: boolean;
  /** Why it needs a reconnect (the platform's answer, or the key that cannot decrypt it). */
  reason?: string;
  /** Sealed under PLATFORM_TOKEN_KEY_PREVIOUS: it moves to PLATFORM_TOKEN_KEY at its next use (a key rotation). */
  previousKey?: boolean;
  /** What to run next. */
  next?: string;
}

/** The connection (organisation, company) of a tenant: its tenants-file entry's, else the one a connect link bound. */
export function connectionOf(t: TenantConfig, binding: Binding | undefined): string | undefined {
  const p = t.platform;
  const named = oauthOf(p)?.oauth.connectionOf(p);
  return named ?? (binding?.platform === p.kind ? binding.connection : undefined);
}

/** The organisation (realm) of each of these tenants that has one: the tenants file's, else a connect link's. */
export async function connectionsOf(redis: Redis, prefix: string, tenants: readonly TenantConfig[]): Promise<Map<string, string>> {
  const bindings = new BindingStore(redis, prefix);
  const out = new Map<string, string>();
  for (const t of tenants) {
    const named = connectionOf(t, undefined);
    const connection = named ?? connectionOf(t, await bindings.get(t.id));
    if (connection !== undefined) out.set(t.id, connection);
  }
  return out;
}

/**
 * Whether the tenant has a connection (connected, or needing a reconnect: a chain, a binding, or the tenants file's
 * refresh token): a link for it then replaces that connection, so it must be asked for as a reconnect (decision 0160).
 */
export async function hasConnection(redis: Redis, prefix: string, tenant: TenantConfig): Promise<boolean> {
  const [report] = await connectionStates(redis, prefix, [tenant]);
  return report !== undefined && report.state !== 'awaiting_connection';
}

/** What a report needs besides Redis: the time, and the keys that decrypt chains (without them, only a mark tells). */
export interface StateOptions {
  now?: number;
  /** PLATFORM_TOKEN_KEY and PLATFORM_TOKEN_KEY_PREVIOUS: a chain neither decrypts is needs_reconnect. */
  keys?: TokenKeys;
}

/** One cipher per environment (the keys object of a loaded Env is the same for the process's life). */
const ciphers = new WeakMap<TokenKeys, TokenCipher>();
function cipherOf(keys: TokenKeys | undefined): TokenCipher | undefined {
  if (keys?.PLATFORM_TOKEN_KEY === undefined) return undefined;
  let cipher = ciphers.get(keys);
  if (cipher === undefined) ciphers.set(keys, (cipher = TokenCipher.fromText(keys.PLATFORM_TOKEN_KEY, keys.PLATFORM_TOKEN_KEY_PREVIOUS)));
  return cipher;
}

/**
 * Which key opens the chain's refresh token: `current`, `previous`, `none` (neither; without keys: a process marked
 * it so), or undefined (no keys given and no mark: not known).
 */
function sealedBy(chain: StoredTokens, context: (connection: string, kind: 'refresh' | 'access') => string, connection: string, cipher: TokenCipher | undefined): 'current' | 'previous' | 'none' | undefined {
  if (cipher === undefined) return chain.undecryptable !== undefined ? 'none' : undefined;
  const bound = context(connection, 'refresh');
  return cipher.openedBy(chain.state.cur, bound) ?? 'none';
}

export async function connectionStates(redis: Redis, prefix: string, tenants: readonly TenantConfig[], o: StateOptions = {}): Promise<ConnectionReport[]> {
  const now = o.now ?? Date.now();
  const cipher = cipherOf(o.keys);
  const bindings = new BindingStore(redis, prefix);
  const out: ConnectionReport[] = [];
  for (const t of tenants) {
    const m = oauthOf(t.platform);
    if (m === undefined) {
      // Credentials in the config (Odoo's key): the module says what Redis knows of them.
      const keyed = await moduleOf(t.platform).connectionState?.(t.platform, { redis, prefix });
      if (keyed !== undefined) out.push({ tenant: t.id, platform: t.platform.kind, via: 'tenants file', ...keyed });
      continue;
    }
    const kind = t.platform.kind;
    const link = `collections-sync connect link --tenant ${t.id}`;
    // A tenant that has a connection (even a broken one) takes a reconnect link (decision 0160).
    const relink = `${link} --reconnect`;
    const binding = await bindings.get(t.id);
    const connection = connectionOf(t, binding);
    const base = { tenant: t.id, platform: kind, ...(connection ? { connection } : {}), ...(binding?.name ? { name: binding.name } : {}) };
    let chain: StoredTokens | undefined;
    try {
      chain = connection === undefined ? undefined : await new PlatformTokenStore(redis, prefix, kind, connection).read();
    } catch {
      out.push({ ...base, state: 'needs_reconnect', reason: 'the stored token chain is not readable', next: relink });
      continue;
    }
    const fromFile = m.oauth.credentials(t.platform).refreshToken !== undefined;
    if (chain === undefined) {
      if (fromFile && connection !== undefined) out.push({ ...base, state: 'connected', via: 'tenants file', reason: 'the refresh token of the tenants file is used at the first run' });
      else out.push({ ...base, state: 'awaiting_connection', next: link });
      continue;
    }
    const s = chain.state;
    const via = s.connectedAt !== undefined || chain.seed.startsWith('connect-') ? 'link' : 'tenants file';
    const connectedAt = s.connectedAt ?? binding?.connectedAt;
    const refreshedAt = s.rotatedAt ?? s.connectedAt;
    const ageDays = refreshedAt === undefined ? undefined : Math.floor((now - refreshedAt) / DAY);
    // A platform whose refresh tokens do not expire from idleness has no limit (0).
    const limit = m.oauth.idleLimitDays > 0 ? m.oauth.idleLimitDays : Infinity;
    const report: ConnectionReport = {
      ...base,
      state: 'connected',
      via,
      ...(connectedAt !== undefined ? { connectedAt } : {}),
      ...(refreshedAt !== undefined ? { refreshedAt } : {}),
      ...(ageDays !== undefined ? { refreshTokenAgeDays: ageDays } : {}),
    };
    const sealed = connection === undefined ? undefined : sealedBy(chain, m.oauth.chain.context, connection, cipher);
    if (sealed === 'none') {
      const keys = cipher?.rotating === true ? 'PLATFORM_TOKEN_KEY or PLATFORM_TOKEN_KEY_PREVIOUS' : 'PLATFORM_TOKEN_KEY';
      out.push({ ...report, state: 'needs_reconnect', reason: `the stored token chain cannot be decrypted with ${keys}: give the key it was sealed with as PLATFORM_TOKEN_KEY_PREVIOUS, or reconnect`, next: relink });
    } else if (s.revoked) out.push({ ...report, state: 'needs_reconnect', reason: `revoked or expired (${s.revoked.reason})`, next: relink });
    else if (ageDays !== undefined && ageDays >= limit) out.push({ ...report, state: 'needs_reconnect', reason: `the refresh token is ${ageDays} days old, past ${kind}'s ${limit}-day idle limit`, next: relink });
    else out.push({ ...report, ...(sealed === 'previous' ? { previousKey: true } : {}), ...(ageDays !== undefined && ageDays >= (limit * 3) / 4 ? { ageing: true, next: `collections-sync sync --tenant ${t.id} (any run refreshes it)` } : {}) });
  }
  return out;
}
