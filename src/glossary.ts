/**
 * The words of collections-sync. One word, one meaning, everywhere (code, logs, README). GLOSSARY below is the
 * list; README.md's "Words" table holds the same words with the same meanings, row for row
 * (test/docs/readme.test.ts keeps them equal). Notes for code only:
 *
 * - cursor: the high-water mark (the newest position fully pushed) is stored apart from the read position.
 * - id map: not "mapping": `src/mapping` is the mappers (record -> request); a mapper's output is a mapper result.
 * - mapper result: one union, src/mapping/result.ts.
 * - decision: one pure function per entity (src/mapping/decide.ts), performed by the sync and shown by the dry run.
 * - run modes: RUN_MODES below. `full` moves the cursors too; `reconcile` catches what Xero changes without a newer
 *   updatedAt (partial payments).
 * - record mirror: src/state/record-mirror.ts. Payment ledger: src/state/payment-ledger.ts. Call ledger:
 *   src/calls/call-ledger.ts. The two ledgers are not the same thing.
 */
export const GLOSSARY: readonly { readonly word: string; readonly meaning: string }[] = [
  { word: 'tenant', meaning: 'one account of the collections service plus one platform connection: an entry of the tenants file, with an `id`' },
  { word: 'platform', meaning: 'where a tenant\'s records come from: a module of src/platforms/registry.ts (`file`, `xero`, `quickbooks`, `zoho-books`, `odoo`, `memory` for tests)' },
  { word: 'entity', meaning: '`contacts`, `invoices` or `payments`' },
  { word: 'record', meaning: 'one canonical platform record of an entity (its fields: README, "Files"), identified by its platform `id`' },
  { word: 'cursor', meaning: 'where an incremental read resumes: an inclusive (updatedAt, id) position, read from minus a lookback' },
  { word: 'id map', meaning: '(tenant, entity, platform id) → the service\'s uuid for that record; one such pair is an id-map entry' },
  { word: 'content hash', meaning: 'a hash of the last payload pushed for a record; an equal hash means skip, with no request' },
  { word: 'mapper result', meaning: 'what a mapper makes of a record: `push` (the request body, and the optional fields left out of it or cut to fit), `skip` (by a rule: a draft) or `reject` (cannot be built: dead-lettered)' },
  { word: 'decision', meaning: 'what a sync does with a record, given its id-map entry and content hash: `create`, `update`, `unchanged`, `skip`, `pending` (an invoice waiting for its contact), `dead-letter` or `unlinked` (a payment with no service id); `dry-run` shows the same decisions' },
  { word: 'intent', meaning: 'a note written before a contact POST, so a retry finds and adopts what the POST created' },
  { word: 'sync run', meaning: 'one pass of a tenant: contacts, then invoices, then payments, in one of four run modes' },
  { word: 'run mode', meaning: '`incremental`: what changed since the cursor, minus the lookback (scheduled); `full`: every record, or every record changed since a date; `reconcile`: every invoice, cursors untouched (the daily scheduled pass that catches balances changed without a newer `updatedAt`); `replay`: the dead letters only, pushed again (`dead-letters retry`)' },
  { word: 'backfill', meaning: 'a manual `full` run started from the CLI, optionally from a date (not a mode of its own)' },
  { word: 'record mirror', meaning: 'the last canonical contacts and invoices seen, per tenant: durable state the sync (invoice balances) and call campaigns (overdue selection) depend on, not a cache (its Redis keys keep their first name, `cache`)' },
  { word: 'payment ledger', meaning: 'per tenant, the known payments and each invoice\'s payments, from which an invoice\'s balance is worked out' },
  { word: 'call ledger', meaning: 'per (tenant, phone number), the hold that keeps a number from being called again within the cooldown' },
  { word: 'dead letter', meaning: 'a record that could not be pushed, kept with its platform id, place, reason, the service\'s `detail`, and the record for replay' },
  { word: 'rotation', meaning: 'issuing a new service token for a client (the service then rejects all older ones)' },
  { word: 'lease', meaning: 'a request\'s short hold on the current token, taken from its process\'s lease pool; a rotation waits for leases' },
  { word: 'gate', meaning: 'closed by the refresher while it rotates a token; new requests wait at it' },
  { word: 'run webhook', meaning: "an event the worker sends out (`run.finished`, `connection.changed`) to a tenant's receiver, signed per Standard Webhooks and retried with back-off; not the webhooks it receives (call outcomes, platforms' change notifications)" },
];

export const ENTITIES = ['contacts', 'invoices', 'payments'] as const;
export type Entity = (typeof ENTITIES)[number];

/** The four modes of a sync run (see above): the job data's `mode` and the run history's. */
export const RUN_MODES = ['incremental', 'full', 'reconcile', 'replay'] as const;
export type RunMode = (typeof RUN_MODES)[number];

/** Who asks for a sync run (kept in the run history). `external`: code outside collections-sync (decision 112). */
export const SYNC_TRIGGERS = ['schedule', 'cli', 'reconcile', 'api', 'webhook', 'connect', 'test', 'external'] as const;

/**
 * `since` bounds a full run (a backfill) only: an incremental run reads from its cursor, a reconcile or replay run
 * from what it keeps. One rule for a job added to the queue and a run asked for over the API (decision 0235).
 */
export const SINCE_RULE = {
  holds: (d: { mode: string; since?: string | undefined }): boolean => d.since === undefined || d.mode === 'full',
  message: 'since goes with mode full only (incremental reads from the cursor, reconcile and replay from what they keep)',
  path: ['since'],
} as const;
