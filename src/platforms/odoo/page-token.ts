/**
 * The odoo adapter's page tokens (opaque to the engine, JSON in base64url): the (write_date, id) of the last row of
 * the page before, from which the next page goes on (keyset: `write_date > w or (write_date = w and id > i)`).
 */
import { z } from 'zod';
import { decodePageToken, encodePageToken } from '../page-token.js';
import { ODOO_DATETIME } from './schemas.js';

export const odooPositionSchema = z.strictObject({ w: z.string().regex(ODOO_DATETIME), i: z.number().int().min(0) });
export type OdooPosition = z.infer<typeof odooPositionSchema>;

export const encodeOdooToken = (p: OdooPosition): string => encodePageToken(p);
export const decodeOdooToken = (token: string): OdooPosition => decodePageToken(token, odooPositionSchema, 'odoo');
