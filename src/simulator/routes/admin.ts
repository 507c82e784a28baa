/**
 * Simulator-only admin endpoints under /__sim (no auth, no faults, not counted), for child processes and people:
 * GET counters, POST reset-counters, POST faults, POST token-lifetime, POST clients, GET data?clientId=,
 * POST payments, POST contacts, POST templates.
 */
import { z } from 'zod';
import { contactCreateSchema, isoDate, paymentType, uuid } from '../../collections/schemas.js';
import { faultSettingsSchema } from '../faults.js';
import { ApiError, parseJsonBody, validate, type Reply } from '../http.js';
import type { FaultSettings, Simulator } from '../types.js';

export const ADMIN_PREFIX = '/__sim';

const lifetimeSchema = z.object({ ms: z.number().int().positive() });
const clientSchema = z.object({ clientId: z.string().min(1), clientSecret: z.string().min(1) });
/** A payment seeded on an invoice (the interface has no payment create endpoint). */
export const seedPaymentSchema = z.object({
  invoiceUuid: uuid,
  amount: z.number(),
  date: isoDate,
  reference: z.string().optional(),
  notes: z.string().optional(),
  paymentType: paymentType.optional(),
});
const seedPaymentRequestSchema = seedPaymentSchema.extend({ clientId: z.string().min(1) });
const seedContactSchema = z.object({ clientId: z.string().min(1), body: contactCreateSchema });
const templateSchema = z.object({ uuid, prompt: z.string().min(1) });
const OK: Reply = { status: 200, body: { ok: true } };

/** `path` is relative to ADMIN_PREFIX. */
export function handleAdmin(sim: Simulator, method: string, path: string, query: URLSearchParams, text: string): Reply {
  const body = (): unknown => parseJsonBody(text);
  switch (`${method} ${path}`) {
    case 'GET /counters':
      return { status: 200, body: sim.counters() };
    case 'POST /reset-counters':
      sim.resetCounters();
      return OK;
    case 'POST /faults':
      sim.setFaults(validate(faultSettingsSchema, body(), 'body') as Partial<FaultSettings>);
      return OK;
    case 'POST /token-lifetime':
      sim.setTokenLifetime(validate(lifetimeSchema, body(), 'body').ms);
      return OK;
    case 'POST /clients': {
      const c = validate(clientSchema, body(), 'body');
      sim.setClient(c.clientId, c.clientSecret);
      return OK;
    }
    case 'GET /data': {
      const clientId = query.get('clientId');
      if (!clientId) throw new ApiError(422, [{ loc: ['query', 'clientId'], msg: 'Field required', type: 'missing' }]);
      return { status: 200, body: sim.data(clientId) };
    }
    case 'POST /payments': {
      const { clientId, ...p } = validate(seedPaymentRequestSchema, body(), 'body');
      return { status: 200, body: sim.seedPayment(clientId, p) };
    }
    case 'POST /contacts': {
      const { clientId, body: contact } = validate(seedContactSchema, body(), 'body');
      return { status: 200, body: sim.seedContact(clientId, contact) };
    }
    case 'POST /templates':
      sim.addTemplate(validate(templateSchema, body(), 'body'));
      return OK;
    default:
      throw new ApiError(404, 'Not Found');
  }
}
