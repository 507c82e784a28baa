/**
 * POST /ai/phone-calls/action/call-bulk and POST /ai/phone-calls/action/call. The description shows no response
 * bodies for either: the simulator answers 201 {"calls": [{uuid, numberToCall, contactUuid}]} for a bulk request
 * and 201 {"uuid"} for a single call (docs/decisions). Calls are not placed: each one is stored as a StoredCall
 * with its metadata and the prompt after promptTags substitution (promptTags themselves are not stored).
 */
import { randomUUID } from 'node:crypto';
import { bulkCallSchema, singleCallSchema } from '../../collections/schemas.js';
import { notFound, parseJsonBody, unprocessable, validate } from '../http.js';
import type { ContactRec, TenantStore } from '../store.js';
import { substitute } from '../templates.js';
import type { StoredCall } from '../types.js';
import type { Handler } from './context.js';

/** A bulk contact's name as a contact field: null when empty, cut to the 255 characters contacts allow. */
const field = (v: string | null | undefined): string | undefined => (v ? v.slice(0, 255) : undefined);

/**
 * The stored contact with the same phone digits; with updateExisting its first and last names are replaced by the
 * supplied (non-empty) ones. Without a match a contact is created (name "first last", or the number).
 */
function contactFor(store: TenantStore, c: { numberToCall: string; firstName?: string | null | undefined; lastName?: string | null | undefined }, updateExisting: boolean): ContactRec {
  const firstName = field(c.firstName);
  const lastName = field(c.lastName);
  const existing = store.findByPhone(c.numberToCall);
  if (existing) {
    if (updateExisting && (firstName !== undefined || lastName !== undefined)) {
      store.updateContact({ uuid: existing.uuid, ...(firstName !== undefined && { firstName }), ...(lastName !== undefined && { lastName }) });
    }
    return existing;
  }
  const name = `${c.firstName ?? ''} ${c.lastName ?? ''}`.trim() || c.numberToCall;
  return store.createContact({
    name: name.slice(0, 255),
    phoneNumber: c.numberToCall.slice(0, 255),
    ...(firstName !== undefined && { firstName }),
    ...(lastName !== undefined && { lastName }),
  });
}

export const callBulk: Handler = ({ ctx, clientId, body }) => {
  const req = validate(bulkCallSchema, parseJsonBody(body), 'body');
  const template = ctx.templates.get(req.aiSettingsTemplateId);
  if (!template) {
    throw unprocessable([{ loc: ['body', 'aiSettingsTemplateId'], msg: 'AI settings template not found', type: 'not_found' }]);
  }
  const store = ctx.store(clientId);
  const createdAt = ctx.nowIso();
  const calls = req.contacts.map((c) => {
    const contact = contactFor(store, c, req.updateExisting ?? false);
    const call: StoredCall = {
      uuid: randomUUID(),
      kind: 'bulk',
      clientId,
      numberToCall: c.numberToCall,
      contactUuid: contact.uuid,
      firstName: c.firstName ?? null,
      lastName: c.lastName ?? null,
      metadata: c.metadata ?? null,
      templateId: req.aiSettingsTemplateId ?? null,
      prompt: substitute(template.prompt, c.promptTags),
      createdAt,
    };
    store.calls.push(call);
    return { uuid: call.uuid, numberToCall: call.numberToCall, contactUuid: call.contactUuid };
  });
  return { status: 201, body: { calls } };
};

/** A call to a stored contact's phone number, with the default template and no substitution. */
export const callSingle: Handler = ({ ctx, clientId, body }) => {
  const req = validate(singleCallSchema, parseJsonBody(body), 'body');
  const store = ctx.store(clientId);
  const contact = store.contacts.get(req.contactUuid.toLowerCase());
  if (!contact) throw notFound('Contact');
  const number = contact.fields.phoneNumber;
  if (number === undefined) {
    throw unprocessable([{ loc: ['body', 'contactUuid'], msg: 'Contact has no phone number', type: 'value_error' }]);
  }
  const template = ctx.templates.get(null);
  const call: StoredCall = {
    uuid: randomUUID(),
    kind: 'single',
    clientId,
    numberToCall: number,
    contactUuid: contact.uuid,
    firstName: contact.fields.firstName ?? null,
    lastName: contact.fields.lastName ?? null,
    metadata: null,
    templateId: null,
    prompt: template?.prompt ?? '',
    createdAt: ctx.nowIso(),
  };
  store.calls.push(call);
  return { status: 201, body: { uuid: call.uuid } };
};
