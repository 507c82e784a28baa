/** A quickbooks tenant's `platform` object in the tenants file. */
import { z } from 'zod';
import { secretField } from '../../secret.js';
import { secretSafeUrl } from '../../urls.js';
import { scopesField } from '../config-fields.js';

export const QUICKBOOKS_DEFAULT_SCOPES = ['com.intuit.quickbooks.accounting'] as const;

/** QuickBooks Online's API address for each environment (Intuit's development keys reach only the sandbox). */
export const QUICKBOOKS_API_URLS = {
  production: 'https://quickbooks.api.intuit.com',
  sandbox: 'https://sandbox-quickbooks.api.intuit.com',
} as const;

export const quickBooksConfig = z
  .strictObject({
    kind: z.literal('quickbooks'),
    clientId: z.string().min(1),
    clientSecret: secretField,
    /** Optional: without it the tenant waits for a connect link (docs/connecting.md); given, it seeds the token chain. */
    refreshToken: secretField.optional(),
    /**
     * The company (Intuit's realm id, a number as text), whose token chain and limits this tenant has. Optional: a
     * connect link binds the company the customer picks (and refuses another one when given).
     */
    realmId: z.string().regex(/^[0-9]{1,32}$/, 'the company id Intuit calls realmId: digits only').optional(),
    environment: z.enum(['production', 'sandbox']),
    /** Without the /v3 path; the default follows `environment`. */
    apiUrl: secretSafeUrl.optional(),
    tokenUrl: secretSafeUrl.default('https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer'),
    authorizeUrl: secretSafeUrl.default('https://appcenter.intuit.com/connect/oauth2'),
    revokeUrl: secretSafeUrl.default('https://developer.api.intuit.com/v2/oauth2/tokens/revoke'),
    scopes: scopesField(QUICKBOOKS_DEFAULT_SCOPES),
    /** The app's webhooks verifier token, which signs change notifications (intuit-signature). */
    webhookVerifierToken: secretField.optional(),
  })
  .transform(({ apiUrl, ...p }) => ({ ...p, apiUrl: apiUrl ?? QUICKBOOKS_API_URLS[p.environment] }));

/** A quickbooks tenant's platform config, defaults filled in (apiUrl per environment, tokenUrl). */
export type QuickBooksConfig = z.infer<typeof quickBooksConfig>;
