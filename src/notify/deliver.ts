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
 * retries with back-off. What this returns and logs never holds the address or the secret: an error's text has the
 * address cut out.
 */
import { request, type Dispatcher } from 'undici';
import { Webhook } from 'standardwebhooks';
import type { Secret } from '../config/secret.js';
import { bodyOf, type NotifyEvent } from './events.js';

export interface NotifyTarget {
  url: string;
  secret: Secret;
}

export interface AttemptResult {
  ok: boolean;
  statusCode?: number;
  /** Why it failed, without the address: `status 500`, `UND_ERR_HEADERS_TIMEOUT: ...`. */
  error?: string;
  ms: number;
}

export interface DeliverOptions {
  timeoutMs: number;
  /** Ends the attempt at once (the worker shuts down): it fails with the abort's reason. */
  signal?: AbortSignal;
  userAgent: string;
  dispatcher?: Dispatcher;
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
  try {
    const res = await request(target.url, {
      method: 'POST',
      headers,
      body,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      signal: o.signal ? AbortSignal.any([AbortSignal.timeout(o.timeoutMs), o.signal]) : AbortSignal.timeout(o.timeoutMs),
      ...(o.dispatcher ? { dispatcher: o.dispatcher } : {}),
    });
    // The answer's body is not read: dropped (bounded by the same timeout), so the connection can be reused.
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return { ok, statusCode: res.statusCode, ...(ok ? {} : { error: `status ${res.statusCode}` }), ms: now() - started };
  } catch (err) {
    return { ok: false, error: describe(err, target.url), ms: now() - started };
  }
}

/** An error's code and message, at most 200 characters, with the address (and its query) cut out. */
function describe(err: unknown, url: string): string {
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'Error';
  let message = typeof e.message === 'string' ? e.message : String(err);
  for (const part of [url, safeOrigin(url)]) if (part) message = message.split(part).join('<url>');
  const text = `${code}: ${message}`;
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

function safeOrigin(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return undefined;
  }
}
