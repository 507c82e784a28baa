/** A xero tenant's `platform` object in the tenants file (docs/connecting.md for the connect-link fields). */
import { z } from 'zod';
import { secretField } from '../../secret.js';
import { secretSafeUrl } from '../../urls.js';
import { scopesField } from '../config-fields.js';

/**
 * Xero's default scopes for a connect link: granular read-only accounting scopes (apps made since 2026-03-02 may not
 * ask for accounting.transactions) and offline_access, which is what yields a refresh token.
 */
export const XERO_DEFAULT_SCOPES = ['offline_access', 'accounting.contacts.read', 'accounting.invoices.read', 'accounting.payments.read'] as const;

export const xeroConfig = z.strictObject({
  kind: z.literal('xero'),
  clientId: z.string().min(1),
  clientSecret: secretField,
  /** Optional: without it the tenant waits for a connect link (docs/connecting.md); given, it seeds the token chain. */
  refreshToken: secretField.optional(),
  /** The organisation; optional: a connect link binds it (and refuses a grant without it when given). */
  xeroTenantId: z.string().min(1).optional(),
  apiUrl: secretSafeUrl.default('https://api.xero.com/api.xro/2.0'),
  tokenUrl: secretSafeUrl.default('https://identity.xero.com/connect/token'),
  authorizeUrl: secretSafeUrl.default('https://login.xero.com/identity/connect/authorize'),
  /** `GET` lists the organisations of a grant; `DELETE /{id}` disconnects one (connect revoke). */
  connectionsUrl: secretSafeUrl.default('https://api.xero.com/connections'),
  scopes: scopesField(XERO_DEFAULT_SCOPES),
});
export type XeroConfig = z.infer<typeof xeroConfig>;
