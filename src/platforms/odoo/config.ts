/**
 * An odoo tenant's `platform` object in the tenants file (docs/odoo.md). Odoo is not OAuth: the customer's
 * administrator makes an API key for a bot user and gives the database's address; the key is a Secret (it prints as
 * `[redacted]` in logs, errors and job data) and is sent only to `url`, which must be https:// (or http:// to this
 * machine: a test double, a local proxy).
 */
import { z } from 'zod';
import { secretField } from '../../secret.js';
import { secretSafeUrl } from '../../urls.js';

/** `auto` asks the server's version (decision 0210); `json2` (Odoo 19 and later) or `jsonrpc` (16 to 21) force one. */
export const ODOO_PROTOCOLS = ['auto', 'json2', 'jsonrpc'] as const;
export type OdooProtocol = (typeof ODOO_PROTOCOLS)[number];

export const odooConfig = z.strictObject({
  kind: z.literal('odoo'),
  /** The server's address (`https://mycompany.odoo.com`), without a path. */
  url: secretSafeUrl,
  /** The database's name (Odoo Online: the subdomain). */
  database: z.string().min(1).max(128),
  /** The bot user's login. */
  username: z.string().min(1).max(255),
  /** The bot user's API key (Preferences, Account Security, New API Key): at most three months. */
  apiKey: secretField,
  /** The company (`res.company` id) whose records are read; needed when the database holds several (decision 0212). */
  companyId: z.number().int().positive().optional(),
  protocol: z.enum(ODOO_PROTOCOLS).default('auto'),
});
export type OdooConfig = z.infer<typeof odooConfig>;
