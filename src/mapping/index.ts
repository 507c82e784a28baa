/** The mapping room: pure functions from canonical records to the service's requests, and the sync's decisions. No I/O. */
export { mapContact, contactUpdateBody, errorDetailOf, type ContactMapperResult, type SyncErrorDetail } from './contact.js';
export { mapInvoice, outstandingOf, roundAmount, type InvoiceContext, type InvoiceMapperResult } from './invoice.js';
export { mapPayment, type PaymentMapperResult } from './payment.js';
export type { MapperPush, MapperReject, MapperResult, MapperSkip } from './result.js';
export {
  decideContact,
  decideInvoice,
  decidePayment,
  type ContactDecision,
  type Create,
  type DeadLetter,
  type IdMapEntry,
  type InvoiceDecision,
  type InvoiceState,
  type PaymentDecision,
  type Pending,
  type Unchanged,
  type Update,
} from './decide.js';
export { contentHash, canonicalJson } from './content-hash.js';
export { checkString, checkEmail, cutText, optionalText, withNulls, type DroppedField, type FieldCheck } from './fields.js';
