/**
 * Zoho Books as an OAuth platform (decision 0191): its token chain, its limits per organization, and its connect flow.
 *
 * - Authorization starts at the main accounts server (`/oauth/v2/auth`, `access_type=offline`, `prompt=consent`: Zoho
 *   gives a refresh token only on a consent, read scopes joined by commas). Zoho sends the customer back with `code`,
 *   `location` and `accounts-server`: the code is exchanged at that accounts server, and later refreshes and the
 *   revoke go there too (kept with the binding). A server that is not one of Zoho's data centres (or the override's
 *   origin) is refused before anything is sent to it.
 * - The app authenticates in the form (client_id, client_secret). Errors come as HTTP 200 with `{"error": ...}`:
 *   `invalid_code` is a refresh token gone for good (revoked, or the oldest of 21 for one user and app), so the chain
 *   is marked needs_reconnect at once. Refresh tokens do not rotate (the answer has none; the chain keeps the one it
 *   has), so no grace is needed; an access token lives an hour and every process shares it (PlatformAuth).
 * - The organization comes from `GET /books/v3/organizations` at the token answer's `api_domain` (checked like the
 *   accounts server): the tenants file's, the only one, or the customer's pick.
 */
import { z } from 'zod';
import type { BindResult, CallbackCheck, ConnectionChoice, OAuthModule } from '../module.js';
import type { Binding } from '../oauth/binding.js';
import { dataCentreOf, defaultApiDomain, mainAccounts, trusted, ZOHO_BOOKS_SCOPES, ZOHO_LOCATIONS, type ZohoBooksConfig } from './config.js';

/** The accounts server of a connection: the one its binding kept (checked again), else the config's main one. */
export function accountsOf(config: ZohoBooksConfig, binding: Binding | undefined): string {
  const kept = binding?.extra?.['accounts-server'];
  if (kept === undefined) return mainAccounts(config);
  const ok = trusted(config, kept, 'accounts');
  if (ok === undefined) throw new Error(`zoho-books: the binding names an accounts server that is not one of Zoho's data centres (${new URL(kept).origin}); send a reconnect link`);
  return ok.url;
}

/** The API domain of a connection: the one its binding kept (checked again against its data centre), else the default. */
export function apiDomainOf(config: ZohoBooksConfig, binding: Binding | undefined): string {
  const accounts = accountsOf(config, binding);
  const kept = binding?.extra?.['api_domain'];
  if (kept === undefined) return defaultApiDomain(config, accounts);
  const ok = trusted(config, kept, 'api', dataCentreOf(config, accounts));
  if (ok === undefined) throw new Error("zoho-books: the binding names an API domain that is not its data centre's; send a reconnect link");
  return ok.url;
}

const organizationsSchema = z.looseObject({
  code: z.number().optional(),
  organizations: z.array(z.looseObject({ organization_id: z.union([z.string(), z.number()]).transform(String), name: z.string().nullish() })),
});

export const zohoBooksOAuth: OAuthModule<ZohoBooksConfig> = {
  chain: {
    kind: 'zoho-books',
    connectionName: 'Zoho Books organization',
    reconnectWhere: 'to that organization in Zoho Books (a reconnect link; Zoho keeps 20 refresh tokens per user and app, and a 21st connection ends the oldest)',
    context: (connection, kind) => `zoho-books:${connection}:${kind}`,
    revokedErrors: ['invalid_code'],
  },
  // Zoho's refresh tokens do not rotate: there is never a previous one to fall back on.
  graceMs: 0,
  clientAuth: 'post',
  // A Zoho refresh token does not expire unused; it ends when revoked or pushed out by a 21st one.
  idleLimitDays: 0,
  // 100 requests a minute and 10 in flight per organization; the daily limit depends on the plan and is read from the answers.
  // Zoho allows 100 calls a minute per organisation. Our limiter stamps a call when it takes the slot, Zoho when the call
  // arrives: at the minute's edge a slot freed here is not yet free there, and each 429 blocks the organisation for a
  // minute (the bench saw two in a first sync). 95 leaves the edge room.
  limits: { scope: 'connection', concurrent: 10, perMinute: 95, perDay: 0, appPerMinute: 0, leaseMs: 60_000, concurrentWaitMs: 30_000, dayBlockMs: 60 * 60_000 },
  // Zoho documents no request id header for its support; this one is logged when an answer carries it.
  requestIdHeader: 'x-zoho-request-id',
  connectionWord: 'organization',
  connectionField: 'organizationId',
  credentials: (c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, refreshToken: c.refreshToken }),
  connectionOf: (c) => c.organizationId,
  tokenUrl: (c, binding) => `${accountsOf(c, binding)}/oauth/v2/token`,
  authorize: (c) => ({ url: `${mainAccounts(c)}/oauth/v2/auth`, scopes: [...ZOHO_BOOKS_SCOPES], separator: ',', pkce: false, params: { access_type: 'offline', prompt: 'consent' } }),

  callback(config, callback): CallbackCheck {
    const named = callback.searchParams.get('accounts-server');
    const location = callback.searchParams.get('location');
    // Without Multi DC the code comes back without a data centre: it is the main accounts server's.
    const server = named ?? mainAccounts(config);
    const ok = trusted(config, server, 'accounts');
    if (ok === undefined) {
      return { kind: 'refuse', reason: 'untrusted_accounts_server', detail: `the callback names an accounts server that is not one of Zoho's data centres (${server.slice(0, 100)}); nothing was sent to it` };
    }
    if (location !== null && ok.dataCentre !== undefined && ZOHO_LOCATIONS[ok.dataCentre] !== location.toLowerCase()) {
      return { kind: 'refuse', reason: 'untrusted_accounts_server', detail: `the callback's location ${location.slice(0, 16)} is not the data centre of its accounts server ${ok.url}` };
    }
    return { kind: 'ok', tokenUrl: `${ok.url}/oauth/v2/token`, extra: { 'accounts-server': ok.url, ...(location !== null ? { location: location.slice(0, 16) } : {}) } };
  },

  async bind({ config, grant, fetch }): Promise<BindResult> {
    const accounts = grant.extra?.['accounts-server'] ?? mainAccounts(config);
    const named = grant.extra?.['api_domain'];
    const api = named === undefined ? defaultApiDomain(config, accounts) : trusted(config, named, 'api', dataCentreOf(config, accounts))?.url;
    if (api === undefined) return { kind: 'refuse', reason: 'untrusted_api_domain', detail: `the token answer names an API domain that is not its data centre's (${String(named).slice(0, 100)}); nothing was sent to it` };
    const got = await fetch(`${api}/books/v3/organizations`, { headers: { authorization: `Zoho-oauthtoken ${grant.accessToken}`, accept: 'application/json' } });
    if (got.status !== 200) return { kind: 'refuse', reason: 'organizations_failed', detail: `GET /organizations answered ${got.status}` };
    const parsed = organizationsSchema.safeParse(got.json);
    if (!parsed.success) return { kind: 'refuse', reason: 'bad_response', detail: 'GET /organizations did not answer a list of organizations' };
    const orgs: ConnectionChoice[] = parsed.data.organizations.map((o) => ({ connection: o.organization_id, ...(o.name ? { name: o.name } : {}) }));
    if (config.organizationId !== undefined) {
      const org = orgs.find((o) => o.connection === config.organizationId);
      if (org !== undefined) return { kind: 'bind', choice: org };
      return {
        kind: 'refuse',
        reason: 'other_organization',
        detail: `the grant does not reach organization ${config.organizationId} (it has ${orgs.length})`,
        text: 'The Zoho account you connected does not have the Zoho Books organization this link is for.',
      };
    }
    if (orgs.length === 1) return { kind: 'bind', choice: orgs[0]! };
    if (orgs.length === 0) return { kind: 'refuse', reason: 'no_organization', detail: 'the grant reaches no Zoho Books organization', text: 'The Zoho account you connected has no Zoho Books organization.' };
    return { kind: 'pick', choices: orgs };
  },

  async revoke({ config, binding, refreshToken, fetch }): Promise<string> {
    if (refreshToken === undefined) return 'not told: no refresh token to revoke';
    const url = `${accountsOf(config, binding)}/oauth/v2/token/revoke?${new URLSearchParams({ token: refreshToken }).toString()}`;
    const res = await fetch(url, { method: 'POST', headers: { accept: 'application/json' } });
    // 400: Zoho no longer knows the token (revoked already, or pushed out by a 21st).
    if (res.status === 400) return 'the refresh token was already revoked';
    if (res.status !== 200) throw new Error(`the revoke endpoint answered ${res.status}`);
    return 'revoked';
  },
};
