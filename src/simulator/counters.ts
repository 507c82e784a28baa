/**
 * What the simulator saw: requests by route and status, 401s by reason, tokens issued, faults injected, writes
 * committed, and the requests in flight (for concurrency and for `supersededInFlight`).
 */
import type { AuthFailure } from './tokens.js';
import type { SimulatorCounters } from './types.js';

function empty(): SimulatorCounters {
  return {
    requests: {},
    unauthorized: { missing: 0, expired: 0, superseded: 0, invalid: 0 },
    tokensIssued: {},
    tokensIssuedTotal: 0,
    supersededInFlight: 0,
    maxConcurrency: 0,
    maxConcurrencyByClient: {},
    maxConcurrencyByRoute: {},
    inFlightMsByClient: {},
    faultsInjected: {},
    writesCommitted: 0,
  };
}

/** One authenticated API request between its arrival and its answer (or destroyed connection). */
export interface InFlightEntry {
  readonly clientId: string;
  /** The route ('POST /contact', ...). */
  readonly route: string;
  /** Generation of the token it was admitted with. */
  readonly gen: number;
  /** Already counted in supersededInFlight (a request counts once however many tokens are issued meanwhile). */
  superseded: boolean;
}

export class Counters {
  #c: SimulatorCounters = empty();
  readonly #inFlight = new Map<string, Set<InFlightEntry>>();
  /** Per client, when its number in flight last changed (for inFlightMsByClient). */
  readonly #changedAt = new Map<string, number>();
  #inFlightTotal = 0;
  /** Requests being processed now, by route (for maxConcurrencyByRoute). */
  readonly #byRoute = new Map<string, number>();

  request(route: string, status: string): void {
    const byStatus = (this.#c.requests[route] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  }

  unauthorized(reason: AuthFailure): void {
    this.#c.unauthorized[reason] += 1;
  }

  fault(kind: string): void {
    this.#c.faultsInjected[kind] = (this.#c.faultsInjected[kind] ?? 0) + 1;
  }

  write(): void {
    this.#c.writesCommitted += 1;
  }

  /** A request admitted with a token of generation `gen` starts being processed. */
  enter(clientId: string, gen: number, route: string): InFlightEntry {
    const entry: InFlightEntry = { clientId, route, gen, superseded: false };
    let set = this.#inFlight.get(clientId);
    if (!set) this.#inFlight.set(clientId, (set = new Set()));
    this.#accrue(clientId, set.size);
    set.add(entry);
    this.#inFlightTotal += 1;
    if (this.#inFlightTotal > this.#c.maxConcurrency) this.#c.maxConcurrency = this.#inFlightTotal;
    const byClient = this.#c.maxConcurrencyByClient;
    if (set.size > (byClient[clientId] ?? 0)) byClient[clientId] = set.size;
    const onRoute = (this.#byRoute.get(route) ?? 0) + 1;
    this.#byRoute.set(route, onRoute);
    const byRoute = this.#c.maxConcurrencyByRoute;
    if (onRoute > (byRoute[route] ?? 0)) byRoute[route] = onRoute;
    return entry;
  }

  leave(entry: InFlightEntry): void {
    const set = this.#inFlight.get(entry.clientId);
    if (!set?.has(entry)) return;
    this.#accrue(entry.clientId, set.size);
    set.delete(entry);
    this.#inFlightTotal -= 1;
    this.#byRoute.set(entry.route, (this.#byRoute.get(entry.route) ?? 1) - 1);
  }

  /** Adds `n` requests in flight since the client's last change to its request-milliseconds. */
  #accrue(clientId: string, n: number): void {
    const now = performance.now();
    const last = this.#changedAt.get(clientId);
    this.#changedAt.set(clientId, now);
    if (last === undefined || n === 0) return;
    const byClient = this.#c.inFlightMsByClient;
    byClient[clientId] = (byClient[clientId] ?? 0) + n * (now - last);
  }

  /** A token of generation `gen` was issued to `clientId`: count its older-token requests still in flight. */
  tokenIssued(clientId: string, gen: number): void {
    this.#c.tokensIssued[clientId] = (this.#c.tokensIssued[clientId] ?? 0) + 1;
    this.#c.tokensIssuedTotal += 1;
    for (const entry of this.#inFlight.get(clientId) ?? []) {
      if (entry.gen < gen && !entry.superseded) {
        entry.superseded = true;
        this.#c.supersededInFlight += 1;
      }
    }
  }

  /** Requests being processed now (arrived, not yet answered), by route: what a test waits on instead of time. */
  inFlightByRoute(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const set of this.#inFlight.values()) for (const e of set) out[e.route] = (out[e.route] ?? 0) + 1;
    return out;
  }

  snapshot(): SimulatorCounters {
    // Up to now: a client with requests in flight accrues them until this moment.
    for (const [clientId, set] of this.#inFlight) if (set.size > 0) this.#accrue(clientId, set.size);
    return structuredClone(this.#c);
  }

  /** Zeroes every counter (requests in flight stay tracked; the maxima restart from 0). */
  reset(): void {
    this.#c = empty();
    const now = performance.now();
    for (const clientId of this.#changedAt.keys()) this.#changedAt.set(clientId, now);
  }
}
