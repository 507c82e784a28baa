/**
 * The parts of Odoo's answers the adapter reads, checked with zod (the ORM's conventions, from Odoo's ORM reference
 * and external API docs: https://www.odoo.com/documentation/19.0/developer/reference/backend/orm.html,
 * .../developer/reference/external_api.html and, for 16 to 18, .../17.0/developer/reference/external_api.html):
 * - an empty field is `false`, never null nor `""` (so `"false"` is never text we push: `false` is read as absent);
 * - a many2one is `[id, display_name]` or `false`;
 * - a datetime is naive UTC `YYYY-MM-DD HH:MM:SS`, a date `YYYY-MM-DD`.
 * Loose objects: a database's modules add fields; the canonical record check decides what a record cannot do without.
 */
import { z } from 'zod';

/** Text, or Odoo's `false` for empty: undefined when empty, trimmed otherwise. */
export const text = z
  .union([z.string(), z.literal(false)])
  .nullish()
  .transform((v) => {
    const t = typeof v === 'string' ? v.trim() : undefined;
    return t === undefined || t === '' ? undefined : t;
  });

/** A many2one: `[id, display_name]`, or `false` when empty. */
export const many2one = z
  .union([z.tuple([z.number().int(), z.union([z.string(), z.literal(false)])]), z.literal(false)])
  .nullish()
  .transform((v) => (Array.isArray(v) ? { id: v[0], name: typeof v[1] === 'string' ? v[1] : undefined } : undefined));

const money = z.number();
const ids = z.array(z.number().int());

/** Naive UTC, as the ORM writes datetimes. */
export const ODOO_DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

export const companySchema = z.looseObject({ id: z.number().int(), name: z.string() });

export const partnerSchema = z.looseObject({
  id: z.number().int(),
  name: text,
  display_name: text,
  is_company: z.boolean().optional(),
  parent_id: many2one,
  type: text,
  active: z.boolean().optional(),
  email: text,
  phone: text,
  vat: text,
  street: text,
  street2: text,
  city: text,
  zip: text,
  country_id: many2one,
  customer_rank: z.number().int().optional(),
  company_id: many2one,
  write_date: z.string().regex(ODOO_DATETIME, 'a naive UTC datetime'),
});

export const moveSchema = z.looseObject({
  id: z.number().int(),
  name: text,
  move_type: z.string(),
  state: z.string(),
  commercial_partner_id: many2one,
  partner_id: many2one,
  invoice_date: text,
  invoice_date_due: text,
  amount_total: money,
  amount_residual: money,
  currency_id: many2one,
  ref: text,
  payment_state: text,
  company_id: many2one,
  write_date: z.string().regex(ODOO_DATETIME, 'a naive UTC datetime'),
});

export const paymentSchema = z.looseObject({
  id: z.number().int(),
  name: text,
  amount: money,
  date: text,
  state: z.string(),
  payment_type: z.string(),
  partner_type: z.string(),
  memo: text,
  ref: text,
  reconciled_invoice_ids: ids,
  company_id: many2one,
  write_date: z.string().regex(ODOO_DATETIME, 'a naive UTC datetime'),
});

export type OdooCompany = z.infer<typeof companySchema>;
export type OdooPartner = z.infer<typeof partnerSchema>;
export type OdooMove = z.infer<typeof moveSchema>;
export type OdooPayment = z.infer<typeof paymentSchema>;

/** A search_read answer: an array of objects, each checked on its own later. */
export const rowsSchema = z.array(z.looseObject({ id: z.number().int() }));

/** `common.version` (JSON-RPC) and `GET /web/version` (19 and later): the major version is what decides. */
export const versionSchema = z.union([
  z.looseObject({ server_version_info: z.array(z.union([z.number(), z.string()])).min(1), server_version: z.string().optional() }),
  z.looseObject({ version_info: z.array(z.union([z.number(), z.string()])).min(1), version: z.string().optional() }),
]);

/** The major version of a version answer (`saas~17.2` counts as 17), or undefined. */
export function majorOf(v: z.infer<typeof versionSchema>): number | undefined {
  const w = v as { server_version_info?: readonly (number | string)[]; version_info?: readonly (number | string)[] };
  const info = w.server_version_info ?? w.version_info ?? [];
  const first = info[0];
  const n = typeof first === 'number' ? first : Number(/(\d+)/.exec(first ?? '')?.[1]);
  return Number.isInteger(n) ? n : undefined;
}

/** `common.authenticate`: the user's id, or `false` (a login or key refused). */
export const authenticateSchema = z.union([z.number().int().positive(), z.literal(false)]);

/** The error object of both transports: JSON-2's body, JSON-RPC's `error.data`. */
export const odooErrorSchema = z.looseObject({ name: z.string(), message: z.string().optional() });
export type OdooError = z.infer<typeof odooErrorSchema>;

/** A JSON-RPC 2.0 answer: `result`, or `error` (HTTP 200 either way) with Odoo's exception in `data`. */
export const jsonRpcAnswerSchema = z.union([
  z.looseObject({ result: z.unknown(), error: z.undefined().optional() }),
  z.looseObject({ error: z.looseObject({ code: z.number().optional(), message: z.string().optional(), data: odooErrorSchema.optional() }) }),
]);
