/**
 * The console reads and acts through the control API (decision 0271): each call is a request to the API's own Hono
 * app, in process, with the signed-in key as its Bearer token. So a page shows what the API answers (the same
 * handlers, views, key limits, rate limit and idempotency), every action is the API's (logged with the key's name),
 * and there is no second way to read state. Answers are parsed with the API's own schemas.
 */
import type { z } from '@hono/zod-openapi';
import { problemSchema } from '../api/schemas.js';

/** The API app's fetch (`OpenAPIHono.request`). */
export type ApiFetch = (request: Request) => Response | Promise<Response>;

export type Problem = z.infer<typeof problemSchema>;
export type Answer<T> = { ok: true; status: number; value: T } | { ok: false; status: number; problem: Problem };

export class ConsoleApi {
  constructor(
    private readonly fetchApi: ApiFetch,
    /** The signed-in key's value (never logged: it goes in the Authorization header of in-process requests only). */
    private readonly key: string,
    private readonly requestId: string,
  ) {}

  /** GET `path` (with its query), the answer parsed with `schema`. */
  get<S extends z.ZodType>(path: string, schema: S): Promise<Answer<z.infer<S>>> {
    return this.call('GET', path, schema);
  }

  /** POST `path` with a JSON body, its answer parsed with `schema`; `once`: the form's Idempotency-Key (a form sent twice acts once). */
  send<S extends z.ZodType>(path: string, schema: S, body?: unknown, once?: string): Promise<Answer<z.infer<S>>> {
    return this.call('POST', path, schema, body, once);
  }

  /** DELETE `path`, or POST it without a body: an action whose answer's body the console does not show. */
  async act(method: 'POST' | 'DELETE', path: string): Promise<Answer<undefined>> {
    const r = await this.call(method, path, undefined);
    return r.ok ? { ok: true, status: r.status, value: undefined } : r;
  }

  private async call<S extends z.ZodType>(method: string, path: string, schema: S | undefined, body?: unknown, once?: string): Promise<Answer<z.infer<S>>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, 'request-id': this.requestId };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (once !== undefined) headers['idempotency-key'] = once;
    const res = await this.fetchApi(new Request(`http://console.internal${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }));
    const text = await res.text();
    const json: unknown = text === '' ? undefined : JSON.parse(text);
    if (res.status >= 400) {
      const p = problemSchema.safeParse(json);
      return { ok: false, status: res.status, problem: p.success ? p.data : { type: 'about:blank', title: 'Error', status: res.status, detail: text.slice(0, 200) } };
    }
    return { ok: true, status: res.status, value: (schema === undefined ? undefined : schema.parse(json)) as z.infer<S> };
  }
}

/** A query string of the defined values (`?a=1&b=x`, or '' when none). */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}
