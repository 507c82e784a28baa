/**
 * The notify room: run webhooks (docs/run-webhooks.md). Events and their ids (events.ts), one signed delivery
 * attempt (deliver.ts), the back-off (backoff.ts). Queueing is src/queues' (the `notify-deliver` job), the job's
 * steps are jobs/notify.ts, and the last delivery's state is src/state/deliveries.ts.
 */
export * from './events.js';
export { deliverEvent, failureClass, FAILURE_CLASSES, signedHeaders, type AttemptResult, type DeliverOptions, type NotifyTarget } from './deliver.js';
export { AddressGuard, BlockedAddressError, embeddedIpv4 } from './address-guard.js';
export { NOTIFY_BACKOFF, notifyBackoffOf, notifyBackoffStrategy, type NotifyBackoff } from './backoff.js';
