/**
 * The one function that calls the token endpoint. No retries here: the refresher (src/auth) owns that
 * policy. The secret leaves the process only in the request body; it and the token never appear in an
 * error (bodies are scrubbed of the secret, success bodies are never kept).
 */
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { Secret } from '../secret.js';
import { AmbiguousError, BadResponseError, CollectionsError, TransientError, ValidationError } from './errors.js';
import { createAgent, send, type HttpResponse } from './http.js';
import { errorFromResponse } from './responses.js';
import { tokenRequestSchema, tokenResponseSchema, toValidationDetail } from './schemas.js';

export const TOKEN_ROUTE = 'POST /auth/v1/api-key/auth';

export interface RequestTokenOptions {
  /** The address serving /auth/v1/api-key/auth (no path). */
  authUrl: string;
  clientId: string;
  clientSecret: Secret;
  /** Whole exchange, default 10 s. Keep it shorter than the refresh lock's TTL. */
  timeoutMs?: number;
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

export interface IssuedToken {
  accessToken: string;
  /** From the JWT's `exp` claim (read, not verified); absent when the token carries none. */
  expiresAtMs?: number;
}

/**
 * The token calls' own keep-alive pool, made at the first call. Not undici's global dispatcher: that is shared by
 * a symbol with Node's bundled undici, and once anything in the process calls the global `fetch` first (a
 * dashboard's server, a library), it is Node's own Agent of another undici version, which refused our request's
 * abort object: every token call failed and no sync could start.
 */
let tokenAgent: Dispatcher | undefined;
const ownAgent = (): Dispatcher => (tokenAgent ??= createAgent());

export async function requestToken(o: RequestTokenOptions): Promise<IssuedToken> {
  const route = TOKEN_ROUTE;
  const secret = o.clientSecret.reveal();
  const checked = tokenRequestSchema.safeParse({ clientId: o.clientId, clientSecret: secret });
  if (!checked.success) throw new ValidationError({ route, detail: toValidationDetail(checked.error.issues, 'body'), local: true });

  const timeoutMs = o.timeoutMs ?? 10_000;
  const url = new URL(`${o.authUrl.replace(/\/+$/, '')}/auth/v1/api-key/auth`);
  let res: HttpResponse;
  try {
    res = await send(
      o.dispatcher ?? ownAgent(),
      { origin: url.origin, path: url.pathname + url.search, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(checked.data) },
      { route, idempotent: true, signal: o.signal, timeoutMs, headersMs: timeoutMs, bodyMs: timeoutMs },
    );
  } catch (err) {
    // Asking again is harmless (it only issues another token), so an unanswered request is transient here.
    if (err instanceof AmbiguousError) {
      // The AmbiguousError's message ends with what happened (a timeout, a reset, ...): kept after the route.
      const why = (err.message.startsWith(`${route}: `) ? err.message.slice(route.length + 2) : err.message).replace(/; the write may have happened$/, '');
      throw new TransientError({ route, message: `no answer from the token endpoint (a token may have been issued): ${why}`, cause: err.cause });
    }
    throw err;
  }

  if (res.status >= 200 && res.status < 300) {
    const parsed = tokenResponseSchema.safeParse(safeJson(res.text));
    if (!parsed.success) {
      // The body is not kept: it may hold a token.
      const issues = parsed.error.issues.map((i) => ({ path: i.path.map((k) => (typeof k === 'number' ? k : String(k))), message: i.message, code: i.code }));
      throw new BadResponseError({ route, status: res.status, issues });
    }
    const accessToken = parsed.data.access_token;
    const expiresAtMs = jwtExpiryMs(accessToken);
    return expiresAtMs === undefined ? { accessToken } : { accessToken, expiresAtMs };
  }

  const body = res.text.split(secret).join('[redacted]');
  if (res.status === 401 || res.status === 403) {
    throw new CollectionsError({ code: 'AUTH_CREDENTIALS_REJECTED', retryable: false, message: `${route}: credentials of client ${o.clientId} refused (${res.status})`, route, status: res.status, body });
  }
  throw errorFromResponse(route, { ...res, text: body }, true);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const claimsSchema = z.looseObject({ exp: z.number().finite().optional() });

/** The `exp` claim of a JWT in milliseconds, read without verifying the signature. */
export function jwtExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined || token.split('.').length !== 3) return undefined;
  const claims = claimsSchema.safeParse(safeJson(Buffer.from(payload, 'base64url').toString('utf8')));
  return claims.success && claims.data.exp !== undefined ? claims.data.exp * 1000 : undefined;
}
