/**
 * The parts of QuickBooks Online v3 JSON answers the adapter reads (Intuit's Finance.xsd: Customer, Invoice,
 * Payment, Line, LinkedTxn, ReferenceType, ModificationMetaData; IntuitRestServiceDef.xsd: QueryResponse,
 * CDCResponse, Fault). Loose objects: Intuit adds fields with every minor version; every field read is optional
 * here and the canonical record check (records.ts) decides what a record cannot do without.
 */
import { z } from 'zod';
import { optionalDecimal, optionalText } from '../wire.js';

const text = optionalText;
const money = optionalDecimal;
const bool = z.boolean().nullish().transform((v) => v ?? undefined);

/** ReferenceType: `{"value": "<id>", "name": "..."}`. */
export const qboRefSchema = z.looseObject({ value: text, name: text });

export const qboMetaDataSchema = z.looseObject({ CreateTime: text, LastUpdatedTime: text });

const emailSchema = z.looseObject({ Address: text });
const phoneSchema = z.looseObject({ FreeFormNumber: text });
export const qboAddressSchema = z.looseObject({
  Line1: text,
  Line2: text,
  Line3: text,
  Line4: text,
  Line5: text,
  City: text,
  CountrySubDivisionCode: text,
  PostalCode: text,
  Country: text,
});

export const qboCustomerSchema = z.looseObject({
  Id: text,
  MetaData: qboMetaDataSchema.nullish(),
  DisplayName: text,
  FullyQualifiedName: text,
  CompanyName: text,
  GivenName: text,
  FamilyName: text,
  PrimaryEmailAddr: emailSchema.nullish(),
  PrimaryPhone: phoneSchema.nullish(),
  Mobile: phoneSchema.nullish(),
  BillAddr: qboAddressSchema.nullish(),
  Active: bool,
  Job: bool,
  BillWithParent: bool,
  ParentRef: qboRefSchema.nullish(),
  AcctNum: text,
});

export const qboLinkedTxnSchema = z.looseObject({ TxnId: text, TxnType: text });

export const qboInvoiceSchema = z.looseObject({
  Id: text,
  MetaData: qboMetaDataSchema.nullish(),
  DocNumber: text,
  TxnDate: text,
  DueDate: text,
  TotalAmt: money,
  Balance: money,
  CurrencyRef: qboRefSchema.nullish(),
  CustomerRef: qboRefSchema.nullish(),
  PrivateNote: text,
  CustomerMemo: z.looseObject({ value: text }).nullish(),
});

export const qboPaymentLineSchema = z.looseObject({
  Amount: money,
  LinkedTxn: z.array(qboLinkedTxnSchema).nullish(),
});

export const qboPaymentSchema = z.looseObject({
  Id: text,
  MetaData: qboMetaDataSchema.nullish(),
  TxnDate: text,
  TotalAmt: money,
  PaymentRefNum: text,
  PrivateNote: text,
  CustomerRef: qboRefSchema.nullish(),
  Line: z.array(qboPaymentLineSchema).nullish(),
});

export type QboCustomer = z.infer<typeof qboCustomerSchema>;
export type QboInvoice = z.infer<typeof qboInvoiceSchema>;
export type QboPayment = z.infer<typeof qboPaymentSchema>;
export type QboAddress = z.infer<typeof qboAddressSchema>;

/** The QuickBooks entity each canonical entity is read from. */
export const QBO_ENTITY = { contacts: 'Customer', invoices: 'Invoice', payments: 'Payment' } as const;
export type QboEntity = (typeof QBO_ENTITY)[keyof typeof QBO_ENTITY];

/** `{"QueryResponse": {"<Entity>": [...], "startPosition", "maxResults", "totalCount"}, "time"}`. */
export function parseQueryResponse(body: unknown, entity: QboEntity): { ok: true; items: unknown[] } | { ok: false; reason: string } {
  const parsed = z.looseObject({ QueryResponse: z.looseObject({ [entity]: z.array(z.unknown()).optional() }) }).safeParse(body);
  if (!parsed.success) return { ok: false, reason: 'the answer has no QueryResponse object' };
  const items = (parsed.data.QueryResponse as Record<string, unknown>)[entity];
  return { ok: true, items: Array.isArray(items) ? items : [] };
}

/** One entity of a CDC answer: its id, `status` (`Deleted` for a deletion) and stamp. */
export const qboCdcItemSchema = z.looseObject({ Id: text, status: text, MetaData: qboMetaDataSchema.nullish() });
export type QboCdcItem = z.infer<typeof qboCdcItemSchema>;

/** `{"CDCResponse": [{"QueryResponse": [{"<Entity>": [...]}, ...]}], "time"}`: the items of `entity`. */
export function parseCdcResponse(body: unknown, entity: QboEntity): { ok: true; items: unknown[] } | { ok: false; reason: string } {
  const parsed = z
    .looseObject({ CDCResponse: z.array(z.looseObject({ QueryResponse: z.array(z.record(z.string(), z.unknown())).nullish() })) })
    .safeParse(body);
  if (!parsed.success) return { ok: false, reason: 'the answer has no CDCResponse list' };
  const items: unknown[] = [];
  for (const response of parsed.data.CDCResponse) {
    for (const qr of response.QueryResponse ?? []) {
      const list = qr[entity];
      if (Array.isArray(list)) items.push(...(list as unknown[]));
    }
  }
  return { ok: true, items };
}

/** Fault types of IntuitRestServiceDef.xsd (FaultTypeEnum, with its own spelling of AuthorizatonFault). */
export type FaultType = 'AuthenticationFault' | 'AuthorizationFault' | 'ValidationFault' | 'SystemFault' | 'unknown';

export interface QboFault {
  type: FaultType;
  /** `code: Message (Detail)` of each error, joined; never a token. */
  message: string;
  codes: string[];
}

const errorSchema = z.looseObject({ Message: text, Detail: text, code: text, message: text, detail: text });
const faultSchema = z.looseObject({ type: text, Error: z.array(errorSchema).nullish(), error: z.array(errorSchema).nullish() });

/** A Fault body (`Fault` or, as 401s come from the gateway, `fault` with lower-case members); undefined if none. */
export function parseFault(body: unknown): QboFault | undefined {
  const outer = z.looseObject({ Fault: faultSchema.optional(), fault: faultSchema.optional() }).safeParse(body);
  if (!outer.success) return undefined;
  const f = outer.data.Fault ?? outer.data.fault;
  if (f === undefined) return undefined;
  const errors = [...(f.Error ?? []), ...(f.error ?? [])];
  const t = (f.type ?? '').toLowerCase();
  const type: FaultType = t.startsWith('authentication')
    ? 'AuthenticationFault'
    : t.startsWith('authoriz')
      ? 'AuthorizationFault'
      : t.startsWith('validation')
        ? 'ValidationFault'
        : t.startsWith('system')
          ? 'SystemFault'
          : 'unknown';
  const message = errors
    .map((e) => {
      const head = [e.code, e.Message ?? e.message].filter((v) => v !== undefined).join(': ');
      const detail = e.Detail ?? e.detail;
      return detail === undefined ? head : `${head} (${detail})`;
    })
    .join('; ')
    .slice(0, 500);
  return { type, message: message === '' ? `${f.type ?? 'fault'} without detail` : message, codes: errors.map((e) => e.code).filter((c): c is string => c !== undefined) };
}
