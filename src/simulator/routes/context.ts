/** What a route handler gets: the caller's client id, the raw body, the query and path parameters, and the state. */
import type { Reply } from '../http.js';
import type { TenantStore } from '../store.js';
import type { Templates } from '../templates.js';

export interface SimContext {
  /** The client's data (created on first use). */
  store(clientId: string): TenantStore;
  readonly templates: Templates;
  /** Today's date (UTC), YYYY-MM-DD. */
  today(): string;
  /** Now, ISO 8601. */
  nowIso(): string;
}

export interface RouteInput {
  ctx: SimContext;
  clientId: string;
  body: string;
  query: URLSearchParams;
  params: { uuid?: string };
}

/** A synchronous handler: it commits its writes and returns the answer, or throws an ApiError. */
export type Handler = (input: RouteInput) => Reply;
