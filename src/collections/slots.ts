/**
 * Request slots: where a call's attempts take their turns at the service (a sync run's request pool). The client
 * holds a slot for each attempt's send only: a call waiting out its back-off before the next attempt holds none, so
 * the other requests of its holder go on meanwhile. On giving a slot back it says how the attempt went, so the
 * holder can size itself to the service's answers (jobs/sync/pool.ts: fewer at once after 429s, a pause for
 * Retry-After).
 */

/** How one attempt went, as far as the service's load goes. */
export type SlotOutcome =
  /** The service answered and did not say it was overloaded (2xx, and 4xx other than 429). */
  | { readonly kind: 'answered' }
  /** 429, or 503: the service asks for less; `retryAfterMs` from its Retry-After, when it gave one. */
  | { readonly kind: 'overloaded'; readonly status: 429 | 503; readonly retryAfterMs: number | undefined }
  /** No answer (reset, timeout, connection refused) or a 5xx that says nothing of load (500, 502, 504). */
  | { readonly kind: 'failed' };

export const ANSWERED: SlotOutcome = Object.freeze({ kind: 'answered' });
export const FAILED: SlotOutcome = Object.freeze({ kind: 'failed' });

export interface RequestSlots {
  /**
   * Waits for a slot; resolves with a ticket to give back. `again`: the call's earlier attempt failed and it has
   * waited out its back-off (a holder may let it go before calls not yet started). Rejects when `signal` aborts.
   */
  take(signal: AbortSignal | undefined, again: boolean): Promise<number>;
  /** The attempt of `ticket` has its token lease and is being sent (before this it waits for the lease). */
  sending?(ticket: number): void;
  /** Gives the slot of `ticket` back, with how its attempt went. Called once per ticket, whatever happened. */
  give(ticket: number, outcome: SlotOutcome): void;
}
