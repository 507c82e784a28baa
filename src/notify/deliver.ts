/**
 * One delivery attempt of an event: a POST of its body, signed per Standard Webhooks with the `standardwebhooks`
 * package (the reference code, so any Standard Webhooks library verifies it):
 *
 *   webhook-id          the event's id, the same on every attempt (receivers dedupe on it)
 *   webhook-timestamp   this attempt's time in Unix seconds: the spec's, and verifiers refuse a timestamp more
 *                       than 5 minutes off their clock, so a retry hours later carries its own (decision 0151)
 *   webhook-signature   `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the secret's key
 *
 * 2xx is delivered; any other status (redirects are not followed), a timeout or a reset is a failure the notify job
 * retries with back-off. A target whose URL came with a tenant (`guarded`) is connected to through the address guard
 * (address-guard.ts): never to this machine, a private network or a link-local address unless
 * OUTBOUND_ALLOWED_NETWORKS lists it. What this returns and logs never holds the address, a resolved address, a port
 * or the secret: a failure is one of a few classes (decision 0177), so the API's `lastWebhook.error` and the log cannot
 * be used to learn which addresses and ports answer.
 */
import { request, type Dispatcher } from 'undici';
import { Webhook } from 'standardwebhooks';
import type { Secret } from '../secret.js';
import { type AddressGuard, BlockedAddressError } from './address-guard.js';
import { bodyOf, type NotifyEvent } from './events.js';

export interface NotifyTarget {
  url: string;
  secret: Secret;
  /** The URL came with a tenant (its `notify.url`): connected to through the address guard. RUN_WEBHOOK_URL is not. */
  guarded?: boolean;
}

/** Why an attempt failed, without address or port: `http <status>` for an answer that is not 2xx, else one of these. */
export const FAILURE_CLASSES = ['blocked address', 'dns', 'refused', 'unreachable', 'reset', 'timeout', 'tls', 'aborted', 'error'] as const;

export interface AttemptResult {
  ok: boolean;
  statusCode?: number;
  /** Why it failed: `http 500`, or a class of FAILURE_CLASSES. */
  error?: string;
  ms: number;
}

export interface DeliverOptions {
  timeoutMs: number;
  /** Ends the attempt at once (the worker shuts down): it fails with the abort's reason. */
  signal?: AbortSignal;
  userAgent: string;
  /** For a target that is not guarded (default: undici's global dispatcher). */
  dispatcher?: Dispatcher;
  /** Required to send to a guarded target: the attempt fails `blocked address` without one. */
  guard?: AddressGuard;
  now?: () => number;
}

/** The Standard Webhooks headers of one attempt (exported for the tests and the docs' examples). */
export function signedHeaders(event: NotifyEvent, body: string, secret: Secret, at: Date): Record<string, string> {
  const signature = new Webhook(secret.reveal()).sign(event.id, at, body);
  return { 'webhook-id': event.id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}

export async function deliverEvent(event: NotifyEvent, target: NotifyTarget, o: DeliverOptions): Promise<AttemptResult> {
  const now = o.now ?? Date.now;
  const started = now();
  const body = bodyOf(event);
  const headers = { 'content-type': 'application/json', 'user-agent': o.userAgent, ...signedHeaders(event, body, target.secret, new Date(started)) };
  if (target.guarded === true && o.guard === undefined) return { ok: false, error: 'blocked address', ms: 0 };
  // A guarded target gets a dispatcher of its own for this attempt: its connection is opened to a checked address.
  const dispatcher = target.guarded === true ? o.guard?.agent({ connectTimeoutMs: o.timeoutMs }) : o.dispatcher;
  try {
    const res = await request(target.url, {
      method: 'POST',
      headers,
      body,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      signal: o.signal ? AbortSignal.any([AbortSignal.timeout(o.timeoutMs), o.signal]) : AbortSignal.timeout(o.timeoutMs),
      ...(dispatcher ? { dispatcher } : {}),
    });
    // The answer's body is not read: dropped (bounded by the same timeout), so the connection can be reused.
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return { ok, statusCode: res.statusCode, ...(ok ? {} : { error: `http ${res.statusCode}` }), ms: now() - started };
  } catch (err) {
    return { ok: false, error: failureClass(err), ms: now() - started };
  } finally {
    if (target.guarded === true) await dispatcher?.destroy().catch(() => undefined);
  }
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|ERR_OSSL_)/;

/** The class of a failed attempt's error (its code, name or cause's), never its message: messages name addresses and ports. */
export function failureClass(err: unknown): (typeof FAILURE_CLASSES)[number] {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (e instanceof BlockedAddressError) return 'blocked address';
    const { code: rawCode, name: rawName } = e as { code?: unknown; name?: unknown };
    const code = typeof rawCode === 'string' ? rawCode : '';
    const name = typeof rawName === 'string' ? rawName : '';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA') return 'dns';
    if (code === 'ECONNREFUSED') return 'refused';
    if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EHOSTDOWN' || code === 'EADDRNOTAVAIL') return 'unreachable';
    if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'reset';
    if (code === 'ETIMEDOUT' || (code.startsWith('UND_ERR_') && code.endsWith('_TIMEOUT')) || name === 'TimeoutError') return 'timeout';
    if (TLS_CODE.test(code)) return 'tls';
    if (name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR') return 'aborted';
  }
  return 'error';
}
