/**
 * HTTP plumbing shared by the routes: the error a handler throws to answer with a status, JSON bodies, and
 * validation against the contract schemas with FastAPI-shaped 422 details.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { toValidationDetail, type ValidationDetail } from '../collections/schemas.js';
import { reportedIssues } from '../zod-issues.js';

/** What a handler answers. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Thrown by a handler to answer `status` with `{"detail": detail}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | ValidationDetail[],
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : 'Validation error');
    this.name = 'ApiError';
  }

  reply(): Reply {
    return { status: this.status, body: { detail: this.detail, ...this.extra }, headers: this.headers };
  }
}

export const notFound = (what: 'Contact' | 'Invoice' | 'Payment'): ApiError => new ApiError(404, `${what} not found`);

export const unprocessable = (detail: ValidationDetail[]): ApiError => new ApiError(422, detail);

export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Reads the whole body as text; null when it is larger than MAX_BODY_BYTES (the rest is discarded). */
export function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function send(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  const text = reply.status === 204 ? '' : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...reply.headers,
  });
  res.end(text);
}

/** The JSON body, or a 422 like the service's: empty -> `missing`, malformed -> `json_invalid`. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw unprocessable([{ loc: ['body'], msg: 'Field required', type: 'missing' }]);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const msg = err instanceof Error ? err.message : 'JSON decode error';
    throw unprocessable([{ loc: ['body'], msg: `JSON decode error: ${msg}`, type: 'json_invalid' }]);
  }
}

/** Parses `input` with `schema`, or throws the 422 with `loc` prefixed by `where`. */
export function validate<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'query' | 'path',
  rename?: (key: PropertyKey) => string | number,
): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw unprocessable(toValidationDetail(reportedIssues(schema, input), where, rename));
  return result.data;
}
