/**
 * The authorization-code flow of each platform, with oauth4webapi doing the protocol (PKCE, the callback's checks,
 * the code exchange): where the customer is sent, how the code becomes tokens, and (Xero) which organisations the
 * grant covers, and how a connection is revoked. Nothing here stores anything; connect.ts decides what is kept.
 *
 *              authorize                              PKCE S256   organisation                 revoke
 *   xero       login.xero.com/identity/connect/...    yes         GET /connections (Bearer)    DELETE /connections/{id}
 *   quickbooks appcenter.intuit.com/connect/oauth2    no (1)      realmId in the callback      POST revoke endpoint
 *
 * (1) Intuit does not document PKCE for its web apps (confidential clients with a secret): it is not sent.
 * Platform addresses are https, or http to this machine only (the tenants file's guard), so oauth4webapi is let use
 * http only for those.
 */
import * as oauth from 'oauth4webapi';
import { request } from 'undici';
import { z } from 'zod';
import { isLoopbackHost, type QuickBooksTenant, type XeroTenant } from '../config/tenants.js';

export type OAuthPlatformConfig = XeroTenant | QuickBooksTenant;

/** How long one call to a platform may take. */
const CALL_TIMEOUT_MS = 10_000;

export interface Grant {
  refreshToken: string;
  accessToken: string;
  expiresInS: number;
}

/** A failed exchange or call: what the customer's page and the log line say (never a secret). */
export class FlowError extends Error {
  constructor(
    readonly reason: string,
    message: string,
    /** The platform's id of the request, for its support (Xero-Correlation-Id, intuit_tid). */
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'FlowError';
  }
}

const usesPkce = (p: OAuthPlatformConfig): boolean => p.kind === 'xero';
const requestIdHeader = (p: OAuthPlatformConfig): string => (p.kind === 'xero' ? 'xero-correlation-id' : 'intuit_tid');

function serverOf(p: OAuthPlatformConfig): oauth.AuthorizationServer {
  return { issuer: new URL(p.authorizeUrl).origin, authorization_endpoint: p.authorizeUrl, token_endpoint: p.tokenUrl };
}

function insecure(url: string): boolean {
  return url.startsWith('http://') && isLoopbackHost(new URL(url).hostname);
}

/** A fresh authorization: the `state`, the PKCE verifier (when the platform takes one) and where to send the customer. */
export async function authorization(p: OAuthPlatformConfig, redirectUri: string): Promise<{ state: string; verifier?: string; url: string }> {
  const state = oauth.generateRandomState();
  const url = new URL(p.authorizeUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', p.clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('scope', p.scopes.join(' '));
  url.searchParams.set('state', state);
  if (!usesPkce(p)) return { state, url: url.href };
  const verifier = oauth.generateRandomCodeVerifier();
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return { state, verifier, url: url.href };
}

/** Exchanges the callback's code (its parameters, checked against `state`) for a grant. */
export async function exchange(p: OAuthPlatformConfig, callback: URL, state: string, verifier: string | undefined, redirectUri: string): Promise<Grant> {
  const as = serverOf(p);
  const client: oauth.Client = { client_id: p.clientId };
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(as, client, callback.searchParams, state);
  } catch (err) {
    const code = err instanceof oauth.AuthorizationResponseError ? err.error : 'invalid_response';
    throw new FlowError(code, `the authorization response was refused (${code})`);
  }
  const options = { signal: AbortSignal.timeout(CALL_TIMEOUT_MS), ...(insecure(p.tokenUrl) ? { [oauth.allowInsecureRequests]: true } : {}) };
  let answer: Response;
  try {
    answer = await oauth.authorizationCodeGrantRequest(as, client, basicAuth(p), params, redirectUri, verifier ?? oauth.nopkce, options);
  } catch (err) {
    throw new FlowError('unavailable', `the token endpoint did not answer (${(err as Error).name})`);
  }
  const requestId = answer.headers.get(requestIdHeader(p)) ?? undefined;
  let tokens: oauth.TokenEndpointResponse;
  try {
    tokens = await oauth.processAuthorizationCodeResponse(as, client, answer);
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) throw new FlowError(err.error, `the token endpoint refused the code (${err.error}, HTTP ${err.status})`, requestId);
    throw new FlowError('bad_response', `the token endpoint's answer was not a token response (${(err as Error).name})`, requestId);
  }
  if (typeof tokens.refresh_token !== 'string' || tokens.refresh_token === '') {
    throw new FlowError('no_refresh_token', 'the grant has no refresh token (is offline_access among the scopes?)', requestId);
  }
  return { refreshToken: tokens.refresh_token, accessToken: tokens.access_token, expiresInS: tokens.expires_in ?? 1800 };
}

const connectionsSchema = z.array(z.looseObject({ id: z.string(), tenantId: z.string(), tenantType: z.string().optional(), tenantName: z.string().nullish() }));
export type XeroConnection = { id: string; tenantId: string; name?: string };

/** The organisations a Xero grant covers (`GET /connections`). */
export async function xeroConnections(p: XeroTenant, accessToken: string): Promise<XeroConnection[]> {
  let status: number;
  let text: string;
  let requestId: string | undefined;
  try {
    const res = await request(p.connectionsUrl, { method: 'GET', headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    status = res.statusCode;
    requestId = headerText(res.headers['xero-correlation-id']);
    text = await res.body.text();
  } catch (err) {
    throw new FlowError('unavailable', `GET /connections failed (${(err as Error).name})`);
  }
  if (status !== 200) throw new FlowError('connections_failed', `GET /connections answered ${status}`, requestId);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = connectionsSchema.safeParse(json);
  if (!parsed.success) throw new FlowError('bad_response', 'GET /connections did not answer a list of connections', requestId);
  return parsed.data
    .filter((c) => c.tenantType === undefined || c.tenantType === 'ORGANISATION')
    .map((c) => ({ id: c.id, tenantId: c.tenantId, ...(c.tenantName ? { name: c.tenantName } : {}) }));
}

/** Disconnects one Xero organisation (`DELETE /connections/{id}`); 404: already gone. */
export async function revokeXero(p: XeroTenant, accessToken: string, connectionId: string): Promise<void> {
  const res = await request(`${p.connectionsUrl}/${encodeURIComponent(connectionId)}`, { method: 'DELETE', headers: { authorization: `Bearer ${accessToken}` }, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  await res.body.dump();
  if (res.statusCode !== 204 && res.statusCode !== 200 && res.statusCode !== 404) {
    throw new FlowError('revoke_failed', `DELETE /connections/{id} answered ${res.statusCode}`, headerText(res.headers['xero-correlation-id']));
  }
}

/** Revokes a QuickBooks grant at Intuit's revoke endpoint (the token given: the refresh or the access token). */
export async function revokeQuickBooks(p: QuickBooksTenant, token: string): Promise<void> {
  const basic = Buffer.from(`${p.clientId}:${p.clientSecret.reveal()}`, 'utf8').toString('base64');
  const res = await request(p.revokeUrl, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  await res.body.dump();
  if (res.statusCode !== 200 && res.statusCode !== 204) throw new FlowError('revoke_failed', `the revoke endpoint answered ${res.statusCode}`, headerText(res.headers['intuit_tid']));
}

/**
 * HTTP Basic client authentication as the refresh path sends it (oauth/oauth.ts): base64 of `id:secret` as they
 * are. oauth4webapi's ClientSecretBasic form-encodes both first (RFC 6749 2.3.1: `-` becomes `%2D`), which the
 * platforms' token endpoints are not known to decode; one spelling for both grants.
 */
function basicAuth(p: OAuthPlatformConfig): oauth.ClientAuth {
  return (_as, _client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${p.clientId}:${p.clientSecret.reveal()}`, 'utf8').toString('base64')}`);
  };
}

function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
