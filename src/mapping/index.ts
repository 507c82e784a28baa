/** The mapping room: pure functions from canonical records to the service's requests. No I/O. */
export { mapContact, errorDetailOf, type ContactMapping, type SyncErrorDetail } from './contact.js';
export { mapInvoice, outstandingOf, roundAmount, type InvoiceContext, type InvoiceMapping } from './invoice.js';
export { mapPayment, type PaymentMapping } from './payment.js';
export { contentHash, canonicalJson } from './content-hash.js';
export { checkString, checkEmail, optionalText, type DroppedField, type FieldCheck } from './fields.js';
