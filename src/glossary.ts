/**
 * The words of collections-sync. One word, one meaning, everywhere (code, logs, README).
 *
 * - tenant: one account of the collections service plus one platform connection. Has an `id` in the tenants file.
 * - platform: the accounting system a tenant's records come from (`file`, `memory`, `xero`).
 * - entity: one of `contacts`, `invoices`, `payments`.
 * - record: one canonical platform record of an entity (record-format.md), identified by its platform `id`.
 * - cursor: where an incremental read resumes: an inclusive (updatedAt, id) position, read from minus a lookback.
 *   The high-water mark (the newest position fully pushed) is stored apart from the read position.
 * - id map: (tenant, entity, platform id) -> the service's uuid for that record; one such pair is an id-map entry.
 *   Not "mapping": `src/mapping` is the mappers (record -> request), and a mapper's output is a mapper result.
 * - content hash: a hash of the last payload pushed for a record; an equal hash means skip without a request.
 * - mapper result: what a mapper makes of a record: `push` (the request body, with the optional fields it left out
 *   or cut), `skip` (by a rule: a draft) or `reject` (cannot be built: dead-lettered). One union, src/mapping/result.ts.
 * - decision: what a sync does with a record given its id-map entry and content hash: `create`, `update`,
 *   `unchanged`, `skip`, `pending` (an invoice waiting for its contact), `dead-letter` or `unlinked` (a payment
 *   with no service id). One pure function per entity (src/mapping/decide.ts), performed by the sync and shown by
 *   the dry run.
 * - intent: a write-ahead note made before a contact POST, so a retry can find and adopt what the POST created.
 * - sync run: one pass over a tenant's entities (contacts, then invoices, then payments), in one of four run
 *   modes (RUN_MODES):
 *   - `incremental`: what changed since the cursor (minus the lookback); the scheduled run.
 *   - `full`: every record, from the beginning or from a date (a backfill); moves the cursors too.
 *   - `reconcile`: invoices only, every one, cursors untouched; the daily scheduled pass that catches balances
 *     the platform changed without a newer updatedAt (Xero: partial payments).
 *   - `replay`: the tenant's dead letters only, pushed again from their stored records (`dead-letters retry`).
 * - backfill: a manual `full` run (optionally from a date), started from the CLI. Not a mode of its own.
 * - record mirror: the last canonical contacts and invoices seen, per tenant (src/state/record-mirror.ts).
 *   Durable state the sync (invoice balances) and the calls (overdue selection) depend on; not a cache.
 * - payment ledger: per tenant, each known payment and each invoice's payments, so an invoice's balance can be
 *   worked out (src/state/payment-ledger.ts). Not the call ledger.
 * - call ledger: per (tenant, phone number), the hold that stops a number being called again within the
 *   cooldown (src/calls/call-ledger.ts). Not the payment ledger.
 * - dead letter: a record that cannot be pushed, kept with its platform id, place, reason and the service's detail.
 * - rotation: issuing a new service token for a client, which invalidates all its older tokens.
 * - lease: a short Redis entry held by one request in flight with the current token; a rotation waits for leases.
 * - gate: closed by the refresher during a rotation; new requests wait at it.
 */
export const ENTITIES = ['contacts', 'invoices', 'payments'] as const;
export type Entity = (typeof ENTITIES)[number];

/** The four modes of a sync run (see above): the job data's `mode` and the run history's. */
export const RUN_MODES = ['incremental', 'full', 'reconcile', 'replay'] as const;
export type RunMode = (typeof RUN_MODES)[number];
