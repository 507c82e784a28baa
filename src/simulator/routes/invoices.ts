/** POST /invoice/create-update and PUT /invoice/payment/{uuid}. */
import { z } from 'zod';
import { invoiceUpsertSchema, paymentUpdateSchema, uuid as uuidSchema } from '../../collections/schemas.js';
import { parseJsonBody, validate } from '../http.js';
import { renderInvoice, renderPayment } from '../render.js';
import type { Handler } from './context.js';

const pathSchema = z.object({ uuid: uuidSchema });

export const upsertInvoice: Handler = ({ ctx, clientId, body }) => {
  const parsed = validate(invoiceUpsertSchema, parseJsonBody(body), 'body');
  const today = ctx.today();
  const rec = ctx.store(clientId).upsertInvoice(parsed, today);
  return { status: 200, body: renderInvoice(rec, today) };
};

export const updatePayment: Handler = ({ ctx, clientId, body, params }) => {
  const { uuid: id } = validate(pathSchema, { uuid: params.uuid }, 'path');
  const parsed = validate(paymentUpdateSchema, parseJsonBody(body), 'body');
  const rec = ctx.store(clientId).updatePayment(id, parsed, ctx.today());
  return { status: 200, body: renderPayment(rec) };
};
