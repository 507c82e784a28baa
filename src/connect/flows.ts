/**
 * The authorization-code flow, with oauth4webapi doing the protocol (PKCE, the callback's checks, the code exchange)
 * and each platform's module (src/platforms/<kind>/oauth.ts) saying what differs: where the customer is sent and with
 * which scopes (`authorize`), where the code is exchanged (its token endpoint, or the data centre the callback names:
 * `callback`), how the app authenticates there (`clientAuth`), and which connection the grant binds (`bind`, with
 * the calls it makes going through `connectFetch`). Nothing here stores anything; connect.ts decides what is kept.
 * Platform addresses are https, or http to this machine only (the tenants file's guard), so oauth4webapi is let use
 * http only for those.
 */
import * as oauth from 'oauth4webapi';
import { request, type Dispatcher } from 'undici';
import type { ConnectFetch, Grant, OAuthModule } from '../platforms/module.js';
import { clientAuthOf } from '../platforms/oauth/oauth.js';
import { isLoopbackHost } from '../urls.js';

export type { Grant } from '../platforms/module.js';

/** How long one call to a platform may take. */
const CALL_TIMEOUT_MS = 10_000;

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

function insecure(url: string): boolean {
  return url.startsWith('http://') && isLoopbackHost(new URL(url).hostname);
}

/** A fresh authorization: the `state`, the PKCE verifier (when the platform takes one) and where to send the customer. */
export async function authorization<C>(m: OAuthModule<C>, config: C, redirectUri: string): Promise<{ state: string; verifier?: string; url: string }> {
  const a = m.authorize(config);
  const state = oauth.generateRandomState();
  const url = new URL(a.url);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', m.credentials(config).clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('scope', a.scopes.join(a.separator));
  url.searchParams.set('state', state);
  for (const [k, v] of Object.entries(a.params ?? {})) url.searchParams.set(k, v);
  if (!a.pkce) return { state, url: url.href };
  const verifier = oauth.generateRandomCodeVerifier();
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return { state, verifier, url: url.href };
}

/** Exchanges the callback's code (its parameters, checked against `state`) at `tokenUrl` for a grant. */
export async function exchange<C>(m: OAuthModule<C>, config: C, callback: URL, state: string, verifier: string | undefined, redirectUri: string, tokenUrl: string): Promise<Grant> {
  const a = m.authorize(config);
  const as: oauth.AuthorizationServer = { issuer: new URL(a.url).origin, authorization_endpoint: a.url, token_endpoint: tokenUrl };
  const { clientId, clientSecret } = m.credentials(config);
  const client: oauth.Client = { client_id: clientId };
  let params: URLSearchParams;
  try {
    // Platforms that name their data centre in the callback (Zoho's `location`, `accounts-server`) add parameters
    // oauth4webapi does not know; they are checked by the module, and only code and state are taken here.
    const known = new URLSearchParams();
    for (const k of ['code', 'state', 'error', 'error_description', 'error_uri', 'iss']) {
      const v = callback.searchParams.get(k);
      if (v !== null) known.set(k, v);
    }
    params = oauth.validateAuthResponse(as, client, known, state);
  } catch (err) {
    const code = err instanceof oauth.AuthorizationResponseError ? err.error : 'invalid_response';
    throw new FlowError(code, `the authorization response was refused (${code})`);
  }
  const options = { signal: AbortSignal.timeout(CALL_TIMEOUT_MS), ...(insecure(tokenUrl) ? { [oauth.allowInsecureRequests]: true } : {}) };
  let answer: Response;
  try {
    answer = await oauth.authorizationCodeGrantRequest(as, client, clientAuthOf(m.clientAuth, clientId, clientSecret), params, redirectUri, verifier ?? oauth.nopkce, options);
  } catch (err) {
    throw new FlowError('unavailable', `the token endpoint did not answer (${(err as Error).name})`);
  }
  const requestId = answer.headers.get(m.requestIdHeader) ?? undefined;
  const body: unknown = await answer
    .clone()
    .json()
    .catch(() => undefined);
  const record = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  // A 200 whose body is an error (Zoho's token endpoint answers errors so).
  if (typeof record['error'] === 'string' && record['access_token'] === undefined) throw new FlowError(record['error'], `the token endpoint refused the code (${record['error']}, HTTP ${answer.status})`, requestId);
  let tokens: oauth.TokenEndpointResponse;
  try {
    tokens = await oauth.processAuthorizationCodeResponse(as, client, answer);
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) throw new FlowError(err.error, `the token endpoint refused the code (${err.error}, HTTP ${err.status})`, requestId);
    throw new FlowError('bad_response', `the token endpoint's answer was not a token response (${(err as Error).name})`, requestId);
  }
  if (typeof tokens.refresh_token !== 'string' || tokens.refresh_token === '') {
    throw new FlowError('no_refresh_token', 'the grant has no refresh token (is offline access among the scopes?)', requestId);
  }
  // What the platform says of the connection beside the tokens (Zoho's api_domain), kept with its binding.
  const extra: Record<string, string> = {};
  for (const [k, v] of Object.entries(record)) if (k === 'api_domain' && typeof v === 'string') extra[k] = v;
  return { refreshToken: tokens.refresh_token, accessToken: tokens.access_token, expiresInS: tokens.expires_in ?? 1800, ...(Object.keys(extra).length > 0 ? { extra } : {}) };
}

/**
 * The JSON calls a platform makes while connecting or revoking (Xero's `GET /connections`), bounded in time, through
 * the connect room's own agent; `before` takes the platform's shared limiter's lease first when it has one.
 */
export function connectFetch(dispatcher: Dispatcher, requestIdHeader: string, before?: () => Promise<{ release(): Promise<void> }>): ConnectFetch {
  return async (url, init) => {
    const lease = before ? await before() : undefined;
    try {
      const res = await request(url, {
        method: init.method ?? 'GET',
        headers: init.headers,
        ...(init.body !== undefined ? { body: init.body } : {}),
        dispatcher,
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      const text = await res.body.text();
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      const id = res.headers[requestIdHeader];
      return { status: res.statusCode, json, requestId: Array.isArray(id) ? id[0] : id };
    } catch (err) {
      throw new FlowError('unavailable', `${new URL(url).pathname} failed (${(err as Error).name})`);
    } finally {
      await lease?.release();
    }
  };
}
