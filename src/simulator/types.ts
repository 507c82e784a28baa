/**
 * The simulator's public types, as agreed between the client, simulator and auth engineers
 * (notes/simulator-api.md). Contact, Invoice, Payment and ContactCreate come from the contract schemas.
 */
import type { Contact, ContactCreate, Invoice, Payment } from '../collections/schemas.js';

/** `422`: refused before processing with a FastAPI-shaped detail (a record the service rejects, then accepts). */
export type ScriptFault = '500' | '503' | '422' | '429' | 'reset' | 'drop';

export interface ScriptEntry {
  /** A route such as 'POST /contact' (see `ROUTES`); any route, the token endpoint included, when absent. */
  route?: string;
  fault: ScriptFault;
  count: number;
  retryAfterS?: number;
  /** Only requests whose path and query, or body, contain this text (`"extPlatformId":"C-7"`, `name=`). */
  matching?: string;
}

export interface FaultSettings {
  /** Added before processing every request except /__sim (the token endpoint included). Default 0. */
  latencyMs: number;
  /** +- uniform jitter on the latency. Default 0. */
  jitterMs: number;
  /** Fraction 0..1 answered 500 or 503 (half each) before processing. */
  error5xxRate: number;
  /** Fraction answered 429 with `Retry-After: retryAfterS` before processing. */
  rate429: number;
  /** Retry-After of `rate429` answers, in seconds. Default 1. */
  retryAfterS: number;
  /** Fraction whose connection is destroyed before processing (nothing committed). */
  resetRate: number;
  /** Fraction processed and committed, then the connection is destroyed (no answer). */
  dropAfterCommitRate: number;
  /** Per client id token bucket (burst = one second's worth) over API requests; excess gets 429. */
  rateLimitPerSecond: number | null;
  /**
   * Deterministic faults: each matching request consumes one from the first entry with count > 0 whose route
   * matches, in order. Applied before the random rates (after authentication and the rate limit).
   */
  script: ScriptEntry[];
}

export interface SimulatorOptions {
  host?: string;
  port?: number;
  clients: Array<{ clientId: string; clientSecret: string }>;
  tokenLifetimeMs?: number;
  faults?: Partial<FaultSettings>;
}

export interface SimulatorCounters {
  /** route ('POST /contact', ..., 'POST /auth/v1/api-key/auth', '<unknown>') -> status ('200', '401', 'reset', 'drop', ...) -> count */
  requests: Record<string, Record<string, number>>;
  unauthorized: { missing: number; expired: number; superseded: number; invalid: number };
  tokensIssued: Record<string, number>;
  tokensIssuedTotal: number;
  /**
   * Requests (admitted with a then-current token, not yet answered) of a client at the moment a newer token of that
   * client was issued; each request counts once. The token protocol keeps it 0.
   */
  supersededInFlight: number;
  /** Most authenticated API requests being processed at once (all clients); the token endpoint is not counted. */
  maxConcurrency: number;
  maxConcurrencyByClient: Record<string, number>;
  /** Most requests of one route ('GET /contact', ...) being processed at once (all clients). */
  maxConcurrencyByRoute: Record<string, number>;
  /**
   * Per client, the sum over time of its requests being processed (request-milliseconds): over a span of `t` ms,
   * divided by `t`, the mean number in flight at the service (how full a client keeps its pool).
   */
  inFlightMsByClient: Record<string, number>;
  /** '500', '503', '422', '429', 'reset', 'drop' (script and random rates) and 'rate-limit' (token bucket). */
  faultsInjected: Record<string, number>;
  /** Committed write requests: contact create/update, invoice upsert, payment update, calls (one per request). */
  writesCommitted: number;
}

export interface StoredCall {
  uuid: string;
  kind: 'bulk' | 'single';
  clientId: string;
  numberToCall: string;
  contactUuid: string;
  firstName: string | null;
  lastName: string | null;
  metadata: Record<string, unknown> | null;
  /** The `aiSettingsTemplateId` sent; null when omitted (the default template was used). */
  templateId: string | null;
  /** The template's prompt after `{{key}}` substitution from the contact's promptTags (which are not stored). */
  prompt: string;
  createdAt: string;
}

export interface SeedPayment {
  invoiceUuid: string;
  amount: number;
  date: string;
  reference?: string | undefined;
  notes?: string | undefined;
  paymentType?: string | undefined;
}

export interface SimulatorData {
  contacts: Contact[];
  invoices: Invoice[];
  payments: (Payment & { invoiceUuid: string })[];
  calls: StoredCall[];
}

export interface Simulator {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  /** origin + '/api-service/v1' */
  readonly baseUrl: string;
  /** origin (the token endpoint is at /auth/v1/api-key/auth) */
  readonly authUrl: string;
  /** Merges; `script` replaces the script. */
  setFaults(f: Partial<FaultSettings>): void;
  setTokenLifetime(ms: number): void;
  /** Adds a client or changes its secret (tokens already issued stay valid). */
  setClient(clientId: string, clientSecret: string): void;
  addTemplate(t: { uuid: string; prompt: string }): void;
  counters(): SimulatorCounters;
  /** Authenticated requests being processed at this moment, by route (arrived, not yet answered). */
  inFlight(): Record<string, number>;
  resetCounters(): void;
  data(clientId: string): SimulatorData;
  seedContact(clientId: string, body: ContactCreate): Contact;
  seedPayment(clientId: string, p: SeedPayment): Payment;
  close(): Promise<void>;
}
