/**
 * Plain HTTP against the simulator for its own tests (undici's `request`, not our collections client): a token,
 * then JSON requests that return status, headers and the parsed body.
 */
import { request } from 'undici';
import type { Simulator } from '../../src/simulator/index.js';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as-is (for malformed JSON). */
  raw?: string;
  query?: Record<string, string | number | boolean>;
}

export async function http(url: string, method: string, opts: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
  const q = opts.query ? `?${new URLSearchParams(Object.entries(opts.query).map(([k, v]): [string, string] => [k, String(v)])).toString()}` : '';
  const body = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const res = await request(`${url}${q}`, { method: method as 'GET', headers, ...(body !== undefined && { body }) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

/** An API request (path relative to /api-service/v1). */
export const api = (sim: Simulator, method: string, path: string, opts: CallOptions = {}): Promise<Answer> =>
  http(`${sim.baseUrl}${path}`, method, opts);

export const admin = (sim: Simulator, method: string, path: string, opts: CallOptions = {}): Promise<Answer> =>
  http(`${sim.origin}/__sim${path}`, method, opts);

export async function tokenAnswer(sim: Simulator, clientId: string, clientSecret: string): Promise<Answer> {
  return http(`${sim.authUrl}/auth/v1/api-key/auth`, 'POST', { body: { clientId, clientSecret } });
}

export async function token(sim: Simulator, clientId: string, clientSecret: string): Promise<string> {
  const a = await tokenAnswer(sim, clientId, clientSecret);
  if (a.status !== 200) throw new Error(`token endpoint answered ${a.status}`);
  return (a.body as { access_token: string }).access_token;
}

export function jwtClaims(jwt: string): Record<string, unknown> {
  const payload = jwt.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Waits until `check` holds (polling, no timing assumption beyond a generous cap). */
export async function until(check: () => boolean, what: string, capMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > capMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const detail = (a: Answer): Array<{ loc: Array<string | number>; msg: string; type: string }> =>
  (a.body as { detail: Array<{ loc: Array<string | number>; msg: string; type: string }> }).detail;
