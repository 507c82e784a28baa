/**
 * Payment record -> the body of `PUT /invoice/payment/{paymentUuid}`. Free text is trimmed and left out when
 * empty. What a deleted payment does to its invoice is the caller's (the invoice's outstanding is recomputed).
 */
import type { PaymentUpdate } from '../collections/schemas.js';
import type { PaymentRecord } from '../platforms/records.js';
import { optionalText } from './fields.js';
import type { MapperPush } from './result.js';

/** A payment is always pushed: a valid payment record holds all its request needs (amount, date). */
export type PaymentMapperResult = MapperPush<PaymentUpdate>;

export function mapPayment(rec: PaymentRecord): PaymentMapperResult {
  const body: PaymentUpdate = { amount: rec.amount, date: rec.date };
  const reference = optionalText(rec.reference);
  const notes = optionalText(rec.notes);
  if (reference !== undefined) body.reference = reference;
  if (notes !== undefined) body.notes = notes;
  return { kind: 'push', body, dropped: [] };
}
